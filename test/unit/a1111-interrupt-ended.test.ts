/**
 * `/sdapi/v1/interrupt` and `/skip` when the render on the GPU ends between the front's listing and the signal
 * (found by the fuzzer as a 500): the answer is A1111's "nothing to stop", not an error.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InFlight } from '../../src/api/in-flight.ts';
import { registerA1111Discovery } from '../../src/api/a1111/discovery-routes.ts';
import { useZodRouteSchemas } from '../../src/api/route-schemas.ts';
import type { ApiContext } from '../../src/api/server.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/log.ts';

const app = Fastify();
const inFlight = new InFlight();
let signals = 0;

beforeAll(async () => {
  const config = loadConfig({ DATA_DIR: '/tmp/cd-interrupt-ended' });
  const ended = async (): Promise<void> => {
    signals++;
    throw new WorkflowNotFoundError('workflow execution already completed', 'render-ended', undefined);
  };
  inFlight.add({ renderId: 'render-ended', startedAt: Date.now(), interrupt: ended, skip: ended });
  const logger = createLogger('silent');
  const ctx = { config, logger, inFlight, options: { all: () => ({}), update: () => undefined }, renders: { client: {} } } as unknown as ApiContext;
  // The routes declare zod schemas: the front's compilers read them (src/api/route-schemas.ts).
  useZodRouteSchemas(app);
  registerA1111Discovery(app, ctx);
  await app.ready();
});
afterAll(async () => {
  await app.close();
});

describe('interrupt and skip of a render that just ended', () => {
  it('answer 200 as when nothing runs', async () => {
    const interrupt = await app.inject({ method: 'POST', url: '/sdapi/v1/interrupt', payload: {} });
    expect(interrupt.statusCode).toBe(200);
    const skip = await app.inject({ method: 'POST', url: '/sdapi/v1/skip', payload: { any: [1] } });
    expect(skip.statusCode).toBe(200);
    expect(signals).toBe(2);
  });
});
