/**
 * Bounds how many large request bodies are read, parsed and decoded at once (issue 11 §4). A 2 MB image
 * arrives as ~2.7 MB of base64 inside JSON: while it is read it exists as the raw string, the parsed
 * object, the decoded bytes and the decoder's own buffers, ~10 MB per request for a moment. A hundred at
 * once would need a gigabyte; through this gate at most `maxConcurrent` do, and the rest wait in FIFO order
 * before their body is read, so their bytes stay in the socket (TCP pushes back on the client) rather than
 * in this process.
 *
 * A request holds its slot from `onRequest` until the body is no longer needed: routes that decode and
 * store the body themselves mark it (`config: { keepsBodySlot: true }`) and call `releaseBodySlot` once the
 * images are in the blob store; for any other route the slot is released once the body is parsed
 * (`preHandler`). A response or an aborted request releases it in any case.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The handler calls releaseBodySlot itself, after it has stored what it needs from the body. */
    keepsBodySlot?: boolean;
  }
}

const slots = new WeakMap<FastifyRequest, () => void>();

export interface BodyGateOptions {
  /** Bodies at least this large (or of unknown length) pass through the gate. */
  largeBytes: number;
  maxConcurrent: number;
}

export function registerBodyGate(app: FastifyInstance, opts: BodyGateOptions): { waiting(): number; active(): number } {
  let active = 0;
  const queue: Array<() => void> = [];
  const acquire = (): Promise<void> =>
    new Promise<void>((resolve) => {
      if (active < opts.maxConcurrent) {
        active++;
        resolve();
      } else queue.push(resolve);
    });
  const release = (): void => {
    const next = queue.shift();
    if (next) next();
    else active--;
  };

  app.addHook('onRequest', async (req) => {
    if (req.method !== 'POST' && req.method !== 'PUT' && req.method !== 'PATCH') return;
    const length = Number(req.headers['content-length']);
    if (Number.isFinite(length) && length < opts.largeBytes) return;
    await acquire();
    let released = false;
    slots.set(req, () => {
      if (released) return;
      released = true;
      release();
    });
  });
  app.addHook('preHandler', async (req) => {
    if (!req.routeOptions.config?.keepsBodySlot) releaseBodySlot(req);
  });
  app.addHook('onResponse', async (req) => releaseBodySlot(req));
  app.addHook('onRequestAbort', async (req) => releaseBodySlot(req));
  return { waiting: () => queue.length, active: () => active };
}

/** The request no longer needs its body: let the next large one in. Idempotent; a no-op for small bodies. */
export function releaseBodySlot(req: FastifyRequest): void {
  const r = slots.get(req);
  if (!r) return;
  slots.delete(req);
  r();
}
