/**
 * Operational routes: health, readiness (no ComfyUI needed), Prometheus metrics, and the ping A1111's UI mode serves (clients use it as a
 * liveness probe). `/metrics` stays behind API_TOKEN when one is set: scrapers can send a bearer token.
 */
import type { FastifyInstance } from 'fastify';
import { renderMetrics } from '../../metrics/metrics.ts';
import { checkHealth } from '../health.ts';
import type { ApiContext } from '../context.ts';

export function registerOps(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/health', async (_req, reply) => {
    const result = await checkHealth(ctx.health);
    return reply.code(result.ok ? 200 : 503).send({ status: result.ok ? 'ok' : 'unavailable', checks: result.checks });
  });

  // Readiness for a model-swapping proxy's start-up check: the front can take renders (Temporal answers and a
  // worker polls). Not ComfyUI: renders wait in Temporal for the GPU, and a proxy kills an entry whose check
  // fails for its whole health timeout, which a slow ComfyUI (or one the proxy has handed away) would cause.
  app.get('/ready', async (_req, reply) => {
    const result = await checkHealth({ ...ctx.health, backends: [] });
    return reply.code(result.ok ? 200 : 503).send({ status: result.ok ? 'ready' : 'unavailable', checks: result.checks });
  });

  app.get('/metrics', async (_req, reply) => {
    const { contentType, body } = await renderMetrics();
    return reply.type(contentType).send(body);
  });

  app.get('/internal/ping', async () => ({}));
}
