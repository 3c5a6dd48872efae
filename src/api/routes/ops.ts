/** Operational routes: health and the ping A1111's UI mode serves (clients use it as a liveness probe). */
import type { FastifyInstance } from 'fastify';
import { checkHealth } from '../health.ts';
import type { ApiContext } from '../server.ts';

export function registerOps(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/health', async (_req, reply) => {
    const result = await checkHealth(ctx.health);
    return reply.code(result.ok ? 200 : 503).send({ status: result.ok ? 'ok' : 'unavailable', checks: result.checks });
  });

  app.get('/internal/ping', async () => ({}));
}
