/**
 * The OpenAI image API on durable renders:
 *   POST /v1/images/generations  JSON → {created, data: [{b64_json | url, revised_prompt?, seed}], …}
 *   POST /v1/images/edits        multipart (`image` / `image[]`, `mask`) or JSON → the same answer
 *   GET  /v1/models, /v1/models/{id}  every served profile (image and video) the ComfyUI can render, in OpenAI's list shape
 * A request is translated into the A1111 body (openai/to-a1111.ts) and resolved by the A1111 normaliser, then
 * started and awaited exactly like `/sdapi/v1/txt2img` (render-wait.ts: blob storage, Idempotency-Key,
 * X-Priority, admission, interrupt). Errors reach the client in OpenAI's envelope (openai/errors.ts).
 */
import { bodyLimitFor } from '../body-limits.ts';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listProfiles, resolveModel } from '../../models/registry.ts';
import { normalizeLimits, normalizeRequestOffLoop, type NormalizedRequest } from '../a1111/normalize.ts';
import { RequestError } from '../a1111/errors.ts';
import type { CatalogLists } from '../a1111/tweaks.ts';
import { requestPriority } from '../priority.ts';
import type { ApiContext } from '../context.ts';
import { readEditBody } from '../openai/edit-body.ts';
import { openAiError, sendOpenAiError } from '../openai/errors.ts';
import { convertOpenAiMaskOffLoop, decodeImagesOffLoop } from '../../bytes/off-loop.ts';
import { imagesResponse, publicBaseUrl } from '../openai/response.ts';
import { withSdCppArgs } from '../openai/sd-cpp-args.ts';
import { firstIssue, imageEditFieldsSchema, imageGenerationSchema } from '../openai/schema.ts';
import { renameFieldIn, renameRequestError, translateEdit, translateGeneration, type Translated, type TranslateContext } from '../openai/to-a1111.ts';
import { outputImages, startAndWait } from './render-wait.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { imageEditFormSchema, imagesAnswerSchema, modelListSchema, modelObjectSchema } from '../openai/answer-schemas.ts';
import { openAiErrors } from '../openapi-shapes.ts';
import { renderHeadersSchema } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';

/** Longest multipart text field: a 16 Ki-character prompt in 4-byte UTF-8. */
const MAX_FIELD_BYTES = 64 * 1024;
const MAX_FIELDS = 64;

const RENDER_ERRORS = {
  409: 'Idempotency-Key reused with another body',
  413: 'An image or the body is too large',
  503: 'Too many renders waiting (Retry-After), or no GPU',
  500: 'The render failed',
};

export async function registerOpenAiImages(fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const startedAt = Math.floor(Date.now() / 1000);
  const app = fastify.withTypeProvider<ZodTypeProvider>();

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

  // Encapsulated: the multipart parser applies to these routes only.
  await app.register(async (plainScope) => {
    const scope = plainScope.withTypeProvider<ZodTypeProvider>();
    const maxImages = Math.max(1, ctx.config.MAX_EXTRA_IMAGES);
    await scope.register(multipart, {
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
    scope.post('/v1/images/generations', generations, async (req, reply) =>
      render(ctx, req, reply, 'openai.images.generations', await prepareGeneration(ctx, req)),
    );
    const edits = { config: { keepsBodySlot: true }, bodyLimit: bodyLimitFor(ctx.config, maxImages + 1), schema: editsDoc };
    scope.post('/v1/images/edits', edits, async (req, reply) => {
      const prepared = await prepareEdit(ctx, req, maxImages);
      // What an Idempotency-Key retry must repeat: the fields and the images' content (a multipart body has no
      // JSON to compare, and the bytes themselves are too large to keep).
      req.body = prepared.fingerprint;
      return render(ctx, req, reply, 'openai.images.edits', prepared);
    });
  });
}

/**
 * A request resolved and ready to start. Built in its own function so that nothing large (uploaded bytes,
 * base64 copies, the translated body) stays referenced by the route's suspended frame while the render runs:
 * only `normalized.images`, which startAndWait empties once they are stored.
 */
interface Prepared {
  normalized: NormalizedRequest;
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
  const t = translateGeneration(fields, parsed.data, translateContext(ctx), tagWarnings);
  return { normalized: await normalize(ctx, req, t), responseFormat: t.responseFormat, sentPrompt: String(raw.prompt), priority };
}

async function prepareEdit(ctx: ApiContext, req: FastifyRequest, maxImages: number): Promise<Prepared> {
  const body = await readEditBody(req, { maxImageBytes: ctx.config.MAX_IMAGE_BYTES, maxImages, maxFieldBytes: MAX_FIELD_BYTES });
  const priority = requestPriority(req.headers['x-priority'], body.fields);
  const tagWarnings: string[] = [];
  const fields = withSdCppArgs(body.fields, tagWarnings);
  const parsed = imageEditFieldsSchema.safeParse(fields);
  if (!parsed.success) throw issueError(parsed.error);
  const limits = { maxImageBytes: ctx.config.MAX_IMAGE_BYTES, maxImagePixels: ctx.config.MAX_IMAGE_PIXELS };
  // Images sent as text (base64, data: URLs) as bytes, like uploaded files: their size decides `size: auto`.
  // Decoded and checked in a byte worker (src/bytes/), like every image a request carries.
  const texts = [...body.images.filter((f) => !f.bytes), ...(body.mask && !body.mask.bytes ? [body.mask] : [])];
  const decoded = await decodeImagesOffLoop(
    texts.map((f) => ({ field: f.field, value: f.text! })),
    limits,
  );
  const bytesOf = new Map(texts.map((f, i) => [f, decoded[i]!.bytes]));
  const images = body.images.map((f) => (f.bytes ? f : { field: f.field, bytes: bytesOf.get(f)! }));
  const mask = body.mask ? (body.mask.bytes ?? bytesOf.get(body.mask)!) : undefined;
  const converted = mask ? await convertOpenAiMaskOffLoop(mask) : undefined;
  const t = translateEdit(fields, parsed.data, images, converted, translateContext(ctx), [...tagWarnings, ...(converted?.warning ? [converted.warning] : [])]);
  const normalized = await normalize(ctx, req, t);
  const fingerprint = { route: 'images/edits', fields: body.fields, images: normalized.images.map((i) => i.ref.sha256) };
  return { normalized, responseFormat: t.responseFormat, sentPrompt: String(body.fields.prompt), priority, fingerprint };
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

function translateContext(ctx: ApiContext): TranslateContext {
  return {
    defaultModel: ctx.options.getString('sd_model_checkpoint') ?? ctx.config.DEFAULT_MODEL,
    maxBatch: ctx.config.MAX_BATCH,
    ...(ctx.config.MAX_RENDER_PIXELS !== undefined ? { maxRenderPixels: ctx.config.MAX_RENDER_PIXELS } : {}),
  };
}

/** The A1111 normaliser on the translated body; its errors and warnings in the client's field names. */
async function normalize(ctx: ApiContext, req: FastifyRequest, t: Translated): Promise<NormalizedRequest> {
  const catalog: CatalogLists = {};
  if (ctx.catalog && /<lora:/i.test(String(t.body.prompt))) catalog.loras = await ctx.catalog.loras().catch(() => undefined);
  try {
    const normalized = await normalizeRequestOffLoop(t.route, t.body, {
      defaultModel: t.profile.id,
      catalog,
      options: {},
      random: Math.random,
      limits: normalizeLimits(ctx.config),
      log: (msg, obj) => req.log.info(obj ?? {}, msg),
    });
    normalized.warnings = [...t.warnings, ...normalized.warnings.map((w) => renameFieldIn(w, t.fieldMap))];
    return normalized;
  } catch (err) {
    if (err instanceof RequestError) throw renameRequestError(err, t.fieldMap);
    throw err;
  }
}

async function render(ctx: ApiContext, req: FastifyRequest, reply: FastifyReply, route: string, p: Prepared) {
  const warnings = p.normalized.warnings;
  for (const w of warnings) req.log.info({ warning: w }, 'request adjusted');
  const finished = await startAndWait(ctx, req, reply, route, p.normalized, p.priority);
  if (!('result' in finished)) return finished;
  const { result, renderId } = finished;
  const images = p.responseFormat === 'url' ? { baseUrl: publicBaseUrl(req, ctx.config.PUBLIC_URL) } : { b64: await outputImages(ctx, result) };
  return imagesResponse({ result, renderId, sentPrompt: p.sentPrompt, images, warnings });
}
