/**
 * The OpenAI image API on durable renders:
 *   POST /v1/images/generations  JSON → {created, data: [{b64_json | url, revised_prompt?, seed}], …}
 *   POST /v1/images/edits        multipart (`image` / `image[]`, `mask`) or JSON → the same answer
 *   GET  /v1/models, /v1/models/{id}  every served profile (image and video) the ComfyUI can render, in OpenAI's list shape
 * A request is mapped once into the neutral request (to-neutral.ts) and resolved by the one resolver
 * (src/request/resolve.ts), then started and awaited like every render (api/render-wait.ts: blob storage,
 * Idempotency-Key, X-Priority, admission, interrupt). Errors are answered in OpenAI's envelope by this
 * plugin's own error handler (errors.ts), naming the OpenAI field where they were thrown.
 */
import { bodyLimitFor } from '../body-limits.ts';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listProfiles, resolveModel } from '../../models/registry.ts';
import { RequestError } from '../../errors/request-error.ts';
import { resolveLimits } from '../../request/limits.ts';
import { resolveImageRequestOffLoop, type ResolvedRequest } from '../../request/resolve.ts';
import type { CatalogLists } from '../../request/upscalers.ts';
import type { ImageSource } from '../../images/image-set.ts';
import { requestPriority } from '../priority.ts';
import type { ApiContext } from '../context.ts';
import { readEditBody, type EditFile } from './edit-body.ts';
import { openAiError, openAiErrorHandler, sendOpenAiError, sendOpenAiRenderFailure } from './errors.ts';
import { convertOpenAiMaskOffLoop, decodeImagesOffLoop } from '../../bytes/off-loop.ts';
import { imagesResponse, publicBaseUrl } from './response.ts';
import { withSdCppArgs } from './sd-cpp-args.ts';
import { firstIssue, imageEditFieldsSchema, imageGenerationSchema } from './schema.ts';
import { editRequest, generationRequest, type OpenAiContext, type OpenAiRequest } from './to-neutral.ts';
import { outputImages, startAndAnswer } from '../render-wait.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { imageEditFormSchema, imagesAnswerSchema, modelListSchema, modelObjectSchema } from './answer-schemas.ts';
import { openAiErrors } from '../openapi-shapes.ts';
import { renderHeadersSchema } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';

/** Longest multipart text field: a 16 Ki-character prompt in 4-byte UTF-8. */
const MAX_FIELD_BYTES = 64 * 1024;
const MAX_FIELDS = 64;

const RENDER_ERRORS = {
  409: 'Idempotency-Key reused with another body',
  413: 'An image or the body is too large',
  429: "This client's share of the waiting renders is full (Retry-After)",
  503: 'Too many renders waiting (Retry-After), or no GPU',
  500: 'The render failed',
};

export async function registerOpenAiImages(fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  await fastify.register(async (plainScope) => openAiPlugin(plainScope, ctx));
}

/** Encapsulated: the multipart parser and OpenAI's error handler apply to these routes only. */
async function openAiPlugin(plainScope: FastifyInstance, ctx: ApiContext): Promise<void> {
  const startedAt = Math.floor(Date.now() / 1000);
  const app = plainScope.withTypeProvider<ZodTypeProvider>();
  app.setErrorHandler(openAiErrorHandler);

  const listDoc = { summary: 'OpenAI: every model this service renders (image and video)', tags: ['OpenAI images'], response: { 200: modelListSchema } };
  // Models the ComfyUI lacks a file or node for are not offered (GET /health says why).
  app.get('/v1/models', { schema: listDoc }, async () => {
    const unusable = (await ctx.catalog?.unusableModels()) ?? new Set<string>();
    return { object: 'list' as const, data: listProfiles().flatMap((p) => (unusable.has(p.id) ? [] : [modelObject(p.id, startedAt)])) };
  });
  const modelDoc = {
    summary: 'OpenAI: one model (by id, title or alias)',
    tags: ['OpenAI images'],
    params: z.object({ id: z.string() }),
    response: { 200: modelObjectSchema, ...openAiErrors({ 404: 'No such model' }) },
  };
  app.get('/v1/models/:id', { schema: modelDoc }, async (req, reply) => {
    const id = req.params.id;
    const profile = resolveModel(id);
    if (!profile) return sendOpenAiError(reply, 404, openAiError(404, `model "${id.slice(0, 100)}" does not exist; GET /v1/models lists them`, 'model'));
    return modelObject(profile.id, startedAt);
  });

  const maxImages = Math.max(1, ctx.config.MAX_EXTRA_IMAGES);
  await app.register(multipart, {
    limits: {
      fileSize: ctx.config.MAX_IMAGE_BYTES + 1,
      // One more image and the mask than allowed, so the count check below answers with its own message.
      files: maxImages + 2,
      fields: MAX_FIELDS,
      fieldSize: MAX_FIELD_BYTES,
      parts: maxImages + 2 + MAX_FIELDS,
    },
  });

  // Both release their large-body slot themselves once the images are stored (api/body-gate.ts).
  // Generations take no image; edits up to maxImages and a mask, as base64 in JSON or as multipart files.
  // The body schemas are the ones the handlers validate with, after the sd.cpp tags are read.
  const generationsDoc = {
    summary: 'OpenAI: text to image (extensions: seed, negative_prompt, steps, guidance, cfg_scale, sampler, scheduler)',
    tags: ['OpenAI images'],
    headers: specOnly(renderHeadersSchema),
    body: specOnly(imageGenerationSchema),
    response: { 200: imagesAnswerSchema, ...openAiErrors(RENDER_ERRORS) },
  };
  const editsDoc = {
    summary: 'OpenAI: edit images (references on instruction-edit models, img2img / inpaint on the others)',
    tags: ['OpenAI images'],
    consumes: ['multipart/form-data', 'application/json'],
    headers: specOnly(renderHeadersSchema),
    body: specOnly(imageEditFormSchema),
    response: { 200: imagesAnswerSchema, ...openAiErrors(RENDER_ERRORS) },
  };
  const generations = { config: { keepsBodySlot: true }, bodyLimit: bodyLimitFor(ctx.config, 0), schema: generationsDoc };
  app.post('/v1/images/generations', generations, async (req, reply) =>
    render(ctx, req, reply, 'openai.images.generations', await prepareGeneration(ctx, req)),
  );
  const edits = { config: { keepsBodySlot: true }, bodyLimit: bodyLimitFor(ctx.config, maxImages + 1), schema: editsDoc };
  app.post('/v1/images/edits', edits, async (req, reply) => {
    const prepared = await prepareEdit(ctx, req, maxImages);
    // What an Idempotency-Key retry must repeat: the fields and the images' content (a multipart body has no
    // JSON to compare, and the bytes themselves are too large to keep).
    req.body = prepared.fingerprint;
    return render(ctx, req, reply, 'openai.images.edits', prepared);
  });
}

/**
 * A request resolved and ready to start. Built in its own function so that nothing large (uploaded bytes,
 * the body) stays referenced by the route's suspended frame while the render runs: only `resolved.images`,
 * which startAndAnswer empties once they are stored.
 */
interface Prepared {
  resolved: ResolvedRequest;
  responseFormat: 'b64_json' | 'url';
  sentPrompt: string;
  priority: number;
  fingerprint?: unknown;
}

async function prepareGeneration(ctx: ApiContext, req: FastifyRequest): Promise<Prepared> {
  const raw = objectBody(req.body);
  const priority = requestPriority(req.headers['x-priority'], raw);
  const tagWarnings: string[] = [];
  const fields = withSdCppArgs(raw, tagWarnings);
  const parsed = imageGenerationSchema.safeParse(fields);
  if (!parsed.success) throw issueError(parsed.error);
  const asked = generationRequest(fields, parsed.data, openAiContext(ctx), tagWarnings);
  return { resolved: await resolve(ctx, asked), responseFormat: asked.responseFormat, sentPrompt: String(raw.prompt), priority };
}

async function prepareEdit(ctx: ApiContext, req: FastifyRequest, maxImages: number): Promise<Prepared> {
  const body = await readEditBody(req, { maxImageBytes: ctx.config.MAX_IMAGE_BYTES, maxImages, maxFieldBytes: MAX_FIELD_BYTES });
  const priority = requestPriority(req.headers['x-priority'], body.fields);
  const tagWarnings: string[] = [];
  const fields = withSdCppArgs(body.fields, tagWarnings);
  const parsed = imageEditFieldsSchema.safeParse(fields);
  if (!parsed.success) throw issueError(parsed.error);
  // The images are decoded once, by the resolver, whether they came as files or as base64 text.
  const images = body.images.map(imageSource);
  const mask = body.mask ? await openAiMask(ctx, body.mask) : undefined;
  const warnings = [...tagWarnings, ...(mask?.warning ? [mask.warning] : [])];
  const maskSource = mask ? { field: 'mask', bytes: mask.png } : undefined;
  const asked = editRequest(fields, parsed.data, images, maskSource, openAiContext(ctx), warnings);
  const resolved = await resolve(ctx, asked);
  const fingerprint = { route: 'images/edits', fields: body.fields, images: resolved.images.map((i) => i.ref.sha256) };
  return { resolved, responseFormat: asked.responseFormat, sentPrompt: String(body.fields.prompt), priority, fingerprint };
}

const imageSource = (f: EditFile): ImageSource => (f.bytes ? { field: f.field, bytes: f.bytes } : { field: f.field, value: f.text ?? '' });

/**
 * OpenAI's mask (transparent = edit) as the service's (white = repaint), converted in a byte worker. A mask
 * sent as base64 text is decoded there first: its pixels are needed to convert it.
 */
async function openAiMask(ctx: ApiContext, mask: EditFile): Promise<{ png: Buffer; warning?: string }> {
  const limits = { maxImageBytes: ctx.config.MAX_IMAGE_BYTES, maxImagePixels: ctx.config.MAX_IMAGE_PIXELS };
  const bytes = mask.bytes ?? (await decodeImagesOffLoop([{ field: mask.field, value: mask.text ?? '' }], limits))[0]!.bytes;
  return convertOpenAiMaskOffLoop(bytes);
}

function modelObject(id: string, created: number) {
  return { id, object: 'model' as const, created, owned_by: 'comfy-durable' };
}

function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) throw new RequestError(400, 'prompt', 'prompt: required (send a JSON body with at least a prompt)');
  if (typeof body !== 'object' || Array.isArray(body)) throw new RequestError(400, 'body', 'body: must be a JSON object');
  return body as Record<string, unknown>;
}

function issueError(error: Parameters<typeof firstIssue>[0]): RequestError {
  const { field, message } = firstIssue(error);
  return new RequestError(400, field, message);
}

function openAiContext(ctx: ApiContext): OpenAiContext {
  return { defaultModel: ctx.options.getString('sd_model_checkpoint') ?? ctx.config.DEFAULT_MODEL, maxBatch: ctx.config.MAX_BATCH };
}

/** The one resolver on the mapped request; its errors and warnings already name the OpenAI fields. */
async function resolve(ctx: ApiContext, asked: OpenAiRequest): Promise<ResolvedRequest> {
  const catalog: CatalogLists = {};
  if (ctx.catalog && /<lora:/i.test(asked.neutral.prompt)) catalog.loras = await ctx.catalog.loras().catch(() => undefined);
  return resolveImageRequestOffLoop(asked.neutral, { defaultModel: asked.profile.id, catalog, random: Math.random, limits: resolveLimits(ctx.config) });
}

async function render(ctx: ApiContext, req: FastifyRequest, reply: FastifyReply, route: string, p: Prepared) {
  const warnings = p.resolved.warnings;
  for (const w of warnings) req.log.info({ warning: w }, 'request adjusted');
  return startAndAnswer(
    ctx,
    req,
    reply,
    route,
    p.resolved,
    async ({ result, renderId }) => {
      const images =
        p.responseFormat === 'url'
          ? { baseUrl: publicBaseUrl(req, ctx.config.PUBLIC_URL, ctx.config.TRUST_FORWARDED_HEADERS) }
          : { b64: await outputImages(ctx, result) };
      return imagesResponse({ result, renderId, sentPrompt: p.sentPrompt, images, warnings });
    },
    { priority: p.priority, sendFailure: sendOpenAiRenderFailure },
  );
}
