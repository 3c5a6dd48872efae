/**
 * Test controls, never part of ComfyUI's API: `/__fake/stats` (prove nothing rendered twice),
 * `/__fake/faults` (inject failures), `/__fake/reset` (fresh state without a restart).
 */
import type { FastifyInstance } from 'fastify';
import { faultsBodySchema } from './faults.ts';
import { parseJsonBody } from './http-util.ts';
import type { FakeState } from './state.ts';

export function registerFakeRoutes(app: FastifyInstance, state: FakeState): void {
  app.get('/__fake/stats', async () => state.statsSnapshot());

  app.get('/__fake/faults', async () => state.faults.state);

  app.post('/__fake/faults', async (req, reply) => {
    let body: unknown;
    try {
      body = parseJsonBody(req.body);
    } catch {
      return reply.code(400).send({ error: 'body must be JSON' });
    }
    const parsed = faultsBodySchema.safeParse(body);
    if (!parsed.success) return reply.code(400).send({ error: 'invalid faults body', issues: parsed.error.issues });
    const { dropNow } = state.faults.apply(parsed.data);
    if (dropNow) state.hub.dropAll();
    return state.faults.state;
  });

  app.post('/__fake/release', async () => ({ released: state.release() }));

  app.post('/__fake/reset', async () => {
    await state.reset();
    return { ok: true };
  });
}
