/**
 * `POST /sdapi/v1/txt2img` and `/img2img`: validate and resolve the body (nothing is stored or started until
 * it fully passes), then start, wait (render-wait.ts) and answer in A1111's shape.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { normalizeRequestOffLoop } from './normalize.ts';
import { needsLivePreprocessors } from './controlnet.ts';
import { resolveLimits } from '../../request/limits.ts';
import { buildInfo } from './response.ts';
import { expectImageRender } from '../../contracts/render.ts';
import { a1111BodyLimits, assertBodyShape } from '../body-shape.ts';
import { overridesToPersist } from './persist-overrides.ts';
import { requestPriority } from '../priority.ts';
import { imageRouteLimits } from '../body-limits.ts';
import type { ApiContext } from '../context.ts';
import type { CatalogLists } from '../../request/upscalers.ts';
import { sdUpscaleNeedsModels } from './sd-upscale.ts';
import { outputImages, startAndAnswer } from '../render-wait.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { img2imgSchema, txt2imgSchema } from './schema.ts';
import { renderAnswerSchema } from './answer-schemas.ts';
import { a1111Errors, RENDER_FAILURES } from '../openapi-shapes.ts';
import { renderHeadersSchema } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';

type Route = 'txt2img' | 'img2img';

export function registerA1111Render(app: FastifyInstance, ctx: ApiContext): void {
  const handler = (route: Route) => async (req: FastifyRequest, reply: FastifyReply) => {
    const priority = requestPriority(req.headers['x-priority'], req.body);
    assertBodyShape(req.body, a1111BodyLimits(ctx.config.MAX_IMAGE_BYTES));
    const defaultModel = ctx.options.getString('sd_model_checkpoint') ?? ctx.config.DEFAULT_MODEL;
    const catalog = await catalogFor(ctx, req.body);
    const normalized = await normalizeRequestOffLoop(route, req.body, {
      defaultModel,
      catalog,
      options: ctx.options.all(),
      random: Math.random,
      limits: resolveLimits(ctx.config),
      log: (msg, obj) => req.log.info(obj ?? {}, msg),
    });
    for (const w of normalized.warnings) req.log.info({ warning: w }, 'request adjusted');
    const sendImages = normalized.parameters.send_images !== false;
    persistOverrides(ctx, req.body);
    return startAndAnswer(
      ctx,
      req,
      reply,
      `sdapi.${route}`,
      normalized,
      async ({ result, renderId }) => ({
        // send_images: false (A1111): the render is kept (gallery, /renders) but the answer carries no images.
        images: sendImages ? await outputImages(ctx, result) : [],
        parameters: normalized.parameters,
        info: buildInfo(expectImageRender(result.request), result, { renderId, warnings: normalized.warnings }),
      }),
      { priority },
    );
  };

  // The handler releases its large-body slot itself, once the images are stored (api/body-gate.ts).
  const limits = imageRouteLimits(ctx.config);
  // The body schema is the one normalizeRequest validates with, after the shape and image checks.
  const schema = (summary: string, body: typeof txt2imgSchema | typeof img2imgSchema) => ({
    summary,
    tags: ['A1111'],
    headers: specOnly(renderHeadersSchema),
    body: specOnly(body),
    response: { 200: renderAnswerSchema, ...a1111Errors(RENDER_FAILURES) },
  });
  const routes = app.withTypeProvider<ZodTypeProvider>();
  routes.post(
    '/sdapi/v1/txt2img',
    { config: { keepsBodySlot: true }, bodyLimit: limits.txt2img, schema: schema('Text to image (hires fix, LoRA tags)', txt2imgSchema) },
    handler('txt2img'),
  );
  routes.post(
    '/sdapi/v1/img2img',
    {
      config: { keepsBodySlot: true },
      bodyLimit: limits.img2img,
      schema: schema('Image to image, inpaint, and edits on instruction-edit models', img2imgSchema),
    },
    handler('img2img'),
  );
}

/** Fetch ComfyUI's file lists only when the body needs them (LoRA tags, a hires or SD upscale upscaler that may be a model). */
async function catalogFor(ctx: ApiContext, body: unknown): Promise<CatalogLists> {
  const b = body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const out: CatalogLists = {};
  if (!ctx.catalog) return out;
  if (typeof b.prompt === 'string' && /<lora:/i.test(b.prompt)) out.loras = await ctx.catalog.loras().catch(() => undefined);
  if ((b.enable_hr !== undefined && b.enable_hr !== false && typeof b.hr_upscaler === 'string') || sdUpscaleNeedsModels(b)) {
    out.upscaleModels = await ctx.catalog.upscaleModels().catch(() => []);
  }
  if (needsLivePreprocessors(b.alwayson_scripts)) out.preprocessors = await ctx.catalog.preprocessors();
  return out;
}

/** `override_settings_restore_afterwards: false`: checked like POST /sdapi/v1/options (a1111/persist-overrides.ts). */
function persistOverrides(ctx: ApiContext, body: unknown): void {
  const patch = overridesToPersist(body);
  if (patch) ctx.options.update(patch);
}
