/**
 * Operational routes: health, readiness (no ComfyUI needed), Prometheus metrics, and the ping A1111's UI mode serves (clients use it as a
 * liveness probe). `/metrics` stays behind API_TOKEN when one is set: scrapers can send a bearer token.
 */
import type { FastifyInstance } from 'fastify';
import { renderMetrics } from '../../metrics/metrics.ts';
import { checkHealth } from '../health.ts';
import type { ApiContext } from '../context.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { bytesResponse } from '../openapi-shapes.ts';
import type { ComfyCatalog } from '../comfy-catalog.ts';
import { listProfiles } from '../../models/registry.ts';

/** The served models split by what the ComfyUI has: what an operator needs to see before a client fails. */
async function modelsReport(catalog: ComfyCatalog): Promise<z.infer<typeof modelsSchema>> {
  const a = await catalog.models();
  const unusable = new Set(a.unusable.map((u) => u.id));
  return {
    checked: a.checked,
    available: listProfiles()
      .map((p) => p.id)
      .filter((id) => !unusable.has(id)),
    unusable: a.unusable,
    switched_off: a.switchedOff,
  };
}

const checksSchema = z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string().optional() }));
const modelsSchema = z
  .object({
    checked: z.boolean().describe('false when ComfyUI did not answer /object_info (then no model is hidden)'),
    available: z.array(z.string()),
    unusable: z
      .array(z.object({ id: z.string(), reason: z.string() }))
      .describe('models this ComfyUI lacks a file or node class for: left out of the model lists'),
    switched_off: z.array(z.string()).describe('models MODELS_CONFIG switches off'),
  })
  .describe('Which models can render on the (first) ComfyUI: a missing model does not fail /health');
const statusSchema = (ok: string, description: string) =>
  z.object({ status: z.enum([ok, 'unavailable']), checks: checksSchema, models: modelsSchema.optional() }).describe(description);

export function registerOps(fastify: FastifyInstance, ctx: ApiContext): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const healthDoc = {
    summary: 'Health: every ComfyUI, Temporal and a worker answer (open without the token)',
    tags: ['Operations'],
    response: { 200: statusSchema('ok', 'Every check passed'), 503: statusSchema('ok', 'A check failed (named in checks; backends by id)') },
  };
  app.get('/health', { schema: healthDoc }, async (_req, reply) => {
    const [result, models] = await Promise.all([checkHealth(ctx.health), ctx.catalog ? modelsReport(ctx.catalog) : undefined]);
    return reply.code(result.ok ? 200 : 503).send({ status: result.ok ? 'ok' : 'unavailable', checks: result.checks, ...(models ? { models } : {}) });
  });

  // Readiness for a model-swapping proxy's start-up check: the front can take renders (Temporal answers and a
  // worker polls). Not ComfyUI: renders wait in Temporal for the GPU, and a proxy kills an entry whose check
  // fails for its whole health timeout, which a slow ComfyUI (or one the proxy has handed away) would cause.
  const readyDoc = {
    summary: 'Readiness: renders can be taken (Temporal answers and a worker polls); ComfyUI not needed',
    tags: ['Operations'],
    response: { 200: statusSchema('ready', 'Ready'), 503: statusSchema('ready', 'Not ready (the failing check is named)') },
  };
  app.get('/ready', { schema: readyDoc }, async (_req, reply) => {
    const result = await checkHealth({ ...ctx.health, backends: [] });
    return reply.code(result.ok ? 200 : 503).send({ status: result.ok ? 'ready' : 'unavailable', checks: result.checks });
  });

  const metricsDoc = {
    summary: 'Prometheus metrics',
    tags: ['Operations'],
    response: { 200: bytesResponse('Prometheus text exposition format', ['text/plain']) },
  };
  app.get('/metrics', { schema: metricsDoc }, async (_req, reply) => {
    const { contentType, body } = await renderMetrics();
    return reply.type(contentType).send(body);
  });

  const pingDoc = {
    summary: "Liveness ping (A1111's UI mode serves it; open without the token)",
    tags: ['Operations'],
    response: { 200: z.object({}).describe('{}') },
  };
  app.get('/internal/ping', { schema: pingDoc }, async () => ({}));
}
