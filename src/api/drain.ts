/**
 * The front's refusal while it drains (SIGTERM: `app.close()` waits for the requests in flight). A request
 * that still arrives on an open connection is refused with a 503, `Retry-After` and `Connection: close`, in
 * its route family's own envelope: the hook throws a RequestError and each family's error handler renders it
 * (A1111, OpenAI, video; the ComfyUI routes catch it in theirs). Fastify's own drain answer (its
 * `return503OnClosing`) is a bare body outside every envelope and without Retry-After (issue 27 L3).
 */
import type { FastifyInstance } from 'fastify';
import { RequestError } from '../errors/request-error.ts';

/** A drained service is back (restarted by its supervisor, or another front took over) within seconds. */
export const DRAIN_RETRY_AFTER_S = 5;

/** The refusal of a request that arrived while the front drains. */
export class ServiceDrainingError extends RequestError {
  constructor() {
    super(503, '', 'the service is stopping and takes no new requests: retry shortly', { retryAfterSeconds: DRAIN_RETRY_AFTER_S });
  }
}

export function isServiceDraining(err: unknown): err is ServiceDrainingError {
  return err instanceof ServiceDrainingError;
}

/**
 * Registers the refusal. Call first among the onRequest hooks: a draining front runs none of its checks for a
 * request it refuses anyway. Needs Fastify's `return503OnClosing: false`, or Fastify answers before any hook.
 */
export function registerDrainRefusal(app: FastifyInstance): void {
  let draining = false;
  // preClose runs once Fastify starts closing, before the listener closes: from here on nothing new starts.
  app.addHook('preClose', async () => {
    draining = true;
  });
  app.addHook('onRequest', async (_req, reply) => {
    if (!draining) return;
    reply.header('Connection', 'close');
    throw new ServiceDrainingError();
  });
}
