/**
 * Bounds how many large request bodies are read, parsed and decoded at once. A 2 MB image
 * arrives as ~2.7 MB of base64 inside JSON: while it is read it exists as the raw string, the parsed
 * object, the decoded bytes and the decoder's own buffers, ~10 MB per request for a moment. A hundred at
 * once would need a gigabyte; through this gate at most `maxConcurrent` do, and the rest wait in FIFO order
 * before their body is read, so their bytes stay in the socket (TCP pushes back on the client) rather than
 * in this process.
 *
 * Of the bodies read at once, at most `maxDecoding` are parsed and decoded at once (`decodeTurn`, awaited by the
 * body parser): a body waiting for its turn is its raw bytes only (~2.7 MB), where one being parsed and decoded is
 * all of the above. Reading stays wide, so uploads trickled by a hostile client cannot hold every slot against a
 * genuine one (M2 below), while the memory of the pile-up follows the narrower turn (issue 25: ~20 MB less at the
 * peak of 100 concurrent 2 MB img2img than four at a time, bench/README.md).
 *
 * A request holds its slot from `onRequest` until the body is no longer needed: routes that decode and
 * store the body themselves mark it (`config: { keepsBodySlot: true }`) and call `releaseBodySlot` once the
 * images are in the blob store; for any other route the slot is released once the body is parsed
 * (`preHandler`). A response or an aborted request releases it in any case.
 *
 * A slot is for reading a body, not for waiting on a client: a body that trickles in slower than
 * `minBytesPerSecond` (averaged from when it got its slot, after a short grace) is answered 408 and its
 * connection closed, so a few slow uploads cannot hold every slot while genuine requests queue behind them
 * until REQUEST_TIMEOUT_MS. While another large body waits for a slot, the bar rises (issue 27 M2): a body
 * slower than CONTENDED_FACTOR × the minimum (at least 64 KiB/s), past a one-second grace, gives its slot up
 * to the one waiting: uploads trickled just above the minimum can no longer hold every slot against a
 * genuine client, whose upload (loopback, LAN) runs at megabytes a second.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The handler calls releaseBodySlot itself, after it has stored what it needs from the body. */
    keepsBodySlot?: boolean;
  }
}

const slots = new WeakMap<FastifyRequest, () => void>();
const decodeTurns = new WeakMap<FastifyRequest, () => Promise<void>>();

export interface BodyGateOptions {
  /** Bodies at least this large (or of unknown length) pass through the gate. */
  largeBytes: number;
  maxConcurrent: number;
  /** Of those, how many are parsed and decoded at once (default: all of them). */
  maxDecoding?: number;
  /** Slowest upload rate a large body may keep its slot with (bytes per second); 0 or unset: no minimum. */
  minBytesPerSecond?: number;
  /** How long a body has before its rate is judged (default 5 s): connection start-up and TCP slow start. */
  graceMs?: number;
}

/** A1111's envelope; written raw, since the request is cut off mid-body. */
const SLOW_UPLOAD_408 = (() => {
  const body = JSON.stringify({
    error: 'HTTPException',
    detail: 'request body arrived too slowly',
    body: '',
    errors: 'request body arrived too slowly',
    field: 'body',
  });
  return `HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
})();

/** Under contention a slot's holder must upload this many times faster than the minimum. */
const CONTENDED_FACTOR = 4;
const CONTENDED_MIN_BYTES_PER_S = 64 * 1024;
const CONTENDED_GRACE_MS = 1_000;

export function registerBodyGate(app: FastifyInstance, opts: BodyGateOptions): { waiting(): number; active(): number } {
  let active = 0;
  const queue: Array<() => void> = [];
  const contended = (): boolean => queue.length > 0;
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
  const maxDecoding = Math.max(1, Math.min(opts.maxDecoding ?? opts.maxConcurrent, opts.maxConcurrent));
  let decoding = 0;
  const decodeQueue: Array<() => void> = [];
  const passDecodeTurn = (): void => {
    const next = decodeQueue.shift();
    if (next) next();
    else decoding--;
  };

  app.addHook('onRequest', async (req) => {
    if (req.method !== 'POST' && req.method !== 'PUT' && req.method !== 'PATCH') return;
    const length = Number(req.headers['content-length']);
    if (Number.isFinite(length) && length < opts.largeBytes) return;
    await acquire();
    let released = false;
    let turn: 'none' | 'waiting' | 'held' = 'none';
    let waiter: (() => void) | undefined;
    const stopWatch = watchUploadRate(req, opts, contended);
    decodeTurns.set(
      req,
      () =>
        new Promise<void>((resolve) => {
          // Asked twice, or after the slot is gone (an aborted request): nothing to wait for.
          if (released || turn !== 'none') return resolve();
          if (decoding < maxDecoding) {
            decoding++;
            turn = 'held';
            return resolve();
          }
          turn = 'waiting';
          waiter = () => {
            turn = 'held';
            resolve();
          };
          decodeQueue.push(waiter);
        }),
    );
    slots.set(req, () => {
      if (released) return;
      released = true;
      stopWatch();
      if (turn === 'held') passDecodeTurn();
      else if (turn === 'waiting') decodeQueue.splice(decodeQueue.indexOf(waiter!), 1);
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

/** Evicts a body that arrives slower than opts.minBytesPerSecond; returns the function that stops watching. */
function watchUploadRate(req: FastifyRequest, opts: BodyGateOptions, contended: () => boolean): () => void {
  const min = opts.minBytesPerSecond ?? 0;
  const socket = req.raw.socket as (typeof req.raw.socket & { bytesRead?: number }) | undefined;
  // In-process injection has no real socket: nothing to measure.
  if (min <= 0 || !socket || typeof socket.bytesRead !== 'number') return () => undefined;
  const graceMs = opts.graceMs ?? 5_000;
  const startBytes = socket.bytesRead;
  const startAt = Date.now();
  const timer = setInterval(
    () => {
      if (req.raw.complete) return clearInterval(timer);
      const elapsed = Date.now() - startAt;
      const rate = ((socket.bytesRead - startBytes) * 1000) / Math.max(1, elapsed);
      const needed = contended()
        ? { min: Math.max(min * CONTENDED_FACTOR, CONTENDED_MIN_BYTES_PER_S), graceMs: Math.min(graceMs, CONTENDED_GRACE_MS) }
        : { min, graceMs };
      if (elapsed < needed.graceMs || rate >= needed.min) return;
      clearInterval(timer);
      req.log.warn(
        { bytesPerSecond: Math.round(rate), minBytesPerSecond: needed.min, contended: contended() },
        'request body arriving too slowly: 408, connection closed',
      );
      releaseBodySlot(req);
      socket.end(SLOW_UPLOAD_408);
      setTimeout(() => socket.destroy(), 1_000).unref();
    },
    Math.min(250, Math.max(50, Math.floor(graceMs / 4))),
  );
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Resolves when this request's body may be parsed and decoded: at once for a small body (it holds no slot),
 * else once fewer than `maxDecoding` large bodies are being parsed and decoded, in arrival order.
 */
export function decodeTurn(req: FastifyRequest): Promise<void> {
  return decodeTurns.get(req)?.() ?? Promise.resolve();
}

/** The request no longer needs its body: let the next large one in. Idempotent; a no-op for small bodies. */
export function releaseBodySlot(req: FastifyRequest): void {
  const r = slots.get(req);
  if (!r) return;
  slots.delete(req);
  r();
}
