/**
 * A1111 extras and image info: `png-info` reads back the infotext, `extra-single-image` and
 * `extra-batch-images` upscale through a ComfyUI graph as durable renders (answering A1111's shapes).
 */
import { resolveLimits } from '../../request/limits.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { imageRouteLimits } from '../body-limits.ts';
import { normalizeExtrasOffLoop } from './extras.ts';
import { readPngInfo } from './png-info.ts';
import type { CatalogLists } from '../../request/upscalers.ts';
import { outcomeWarnings } from '../../contracts/outcome.ts';
import { infotextFor } from '../../infotext/format.ts';
import { resolveModel } from '../../models/registry.ts';
import type { ApiContext } from '../context.ts';
import { outputImages, startAndAnswer } from '../render-wait.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { extrasBatchSchema, extrasSingleSchema } from './extras.ts';
import { extrasBatchAnswerSchema, extrasSingleAnswerSchema, pngInfoAnswerSchema, pngInfoBodySchema } from './answer-schemas.ts';
import { a1111Errors, RENDER_FAILURES } from '../openapi-shapes.ts';
import { renderHeadersSchema } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';

export function registerA1111Extras(app: FastifyInstance, ctx: ApiContext): void {
  const limits = () => resolveLimits(ctx.config);
  const routes = app.withTypeProvider<ZodTypeProvider>();

  const bodyLimits = imageRouteLimits(ctx.config);
  routes.post(
    '/sdapi/v1/png-info',
    {
      bodyLimit: bodyLimits.pngInfo,
      schema: {
        summary: 'Read the generation parameters an image carries',
        tags: ['A1111'],
        body: specOnly(pngInfoBodySchema),
        response: { 200: pngInfoAnswerSchema, ...a1111Errors() },
      },
    },
    async (req) => readPngInfo(req.body, limits()),
  );

  const extras = (route: 'single' | 'batch') => async (req: FastifyRequest, reply: FastifyReply) => {
    const upscaler = (req.body as { upscaler_1?: unknown } | undefined)?.upscaler_1;
    const catalog: CatalogLists = {};
    // Only a name that is not a built-in method can be a model file.
    if (ctx.catalog && typeof upscaler === 'string' && upscaler.trim() !== '') catalog.upscaleModels = await ctx.catalog.upscaleModels().catch(() => []);
    const defaultModel = resolveModel(ctx.options.getString('sd_model_checkpoint') ?? '')?.id ?? ctx.config.DEFAULT_MODEL;
    const normalized = await normalizeExtrasOffLoop(route, req.body, { defaultModel, limits: limits(), catalog });
    for (const w of normalized.warnings) req.log.info({ warning: w }, 'request adjusted');
    return startAndAnswer(ctx, req, reply, `sdapi.extras-${route}`, normalized, async ({ result }) => {
      const images = await outputImages(ctx, result);
      // A1111 shows the postprocessing parameters as html_info; warnings follow them (a blank output included).
      const html = [infotextFor(result.request, 0), ...normalized.warnings, ...outcomeWarnings(result.request, result)].join('<br>');
      return route === 'single' ? { html_info: html, image: images[0] ?? '' } : { html_info: html, images };
    });
  };
  // The body schemas are the ones normalizeExtras validates with.
  const schema = (summary: string, body: z.ZodType, answer: z.ZodType) => ({
    summary,
    tags: ['A1111'],
    headers: specOnly(renderHeadersSchema),
    body: specOnly(body),
    response: { 200: answer, ...a1111Errors(RENDER_FAILURES) },
  });
  routes.post(
    '/sdapi/v1/extra-single-image',
    { bodyLimit: bodyLimits.extraSingle, schema: schema('Upscale one image through ComfyUI', extrasSingleSchema, extrasSingleAnswerSchema) },
    extras('single'),
  );
  routes.post(
    '/sdapi/v1/extra-batch-images',
    { bodyLimit: bodyLimits.extraBatch, schema: schema('Upscale several images through ComfyUI', extrasBatchSchema, extrasBatchAnswerSchema) },
    extras('batch'),
  );
}
