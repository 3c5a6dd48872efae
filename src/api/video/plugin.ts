/**
 * The vLLM-Omni video API (docs/video-api.md): every request becomes a durable `render` workflow of kind
 * `video`, the same one the image routes use.
 *   POST   /v1/videos/sync           → video/mp4 bytes (X-Request-Id, X-Model, X-Inference-Time-S, X-Render-Id); 504 on timeout
 *   POST   /v1/videos                → the job object (status queued)
 *   GET    /v1/videos                → {object: list, data, first_id, last_id, has_more}; after, limit 0..100, order
 *   GET    /v1/videos/{id}           → the job; a failed job with its error's HTTP status
 *   GET    /v1/videos/{id}/content   → the MP4 (streamed); 404 while running, 422 after a failure
 *   DELETE /v1/videos/{id}           → cancels a queued/running render (ComfyUI is interrupted) → {id, deleted, object}
 * Bodies: multipart/form-data, urlencoded or JSON; `X-Priority` / `priority` (1..5) as for images; `webhook_url`
 * (or, on the async route, the configured WEBHOOK_URL) gets a signed `video.completed` / `video.failed`. Errors: FastAPI's `{detail}` plus an OpenAI-style
 * `error {message, type, param, code}` naming the field.
 */
import { randomUUID } from 'node:crypto';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { BlobNotFoundError } from '../../blobs/store.ts';
import type { RenderResult } from '../../contracts/render.ts';
import { RequestError } from '../../errors/request-error.ts';
import { AdmissionRefusedError } from '../../renders/admission.ts';
import { retryAfterOf } from '../../errors/request-error.ts';
import { viewerOf } from '../clients.ts';
import { requestPriority } from '../priority.ts';
import { validationRequestError } from '../route-schemas.ts';
import { RenderFailedError, type StartedRender } from '../../renders/render-service.ts';
import type { ApiContext } from '../context.ts';
import { idempotencyKey } from '../request-headers.ts';
import { readVideoBody } from './body.ts';
import { bodyLimitFor, imageRouteLimits, VIDEO_MAX_FILES } from '../body-limits.ts';
import { inferenceSeconds, listJobs, queuedJob, readJob, VideoNotFoundError, type VideoJob } from './jobs.ts';
import { normalizeVideoRequestOffLoop, type NormalizedVideo } from './normalize.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { videoFieldsSchema } from './schema.ts';
import { videoContentQuerySchema, videoDeletedSchema, videoJobSchema, videoPageSchema } from './answer-schemas.ts';
import { bytesResponse, videoErrors } from '../openapi-shapes.ts';
import { renderHeadersSchema } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';

export interface VideoErrorBody {
  detail: string;
  error: { message: string; type: string; param: string | null; code: number };
  [extra: string]: unknown;
}

export function videoError(status: number, message: string, param?: string, extra: Record<string, unknown> = {}): VideoErrorBody {
  const type = status === 404 ? 'not_found_error' : status < 500 ? 'invalid_request_error' : 'server_error';
  return { ...extra, detail: message, error: { message, type, param: param ?? null, code: status } };
}

function send(reply: FastifyReply, status: number, body: VideoErrorBody): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}

// Bound the length and refuse control characters.
// eslint-disable-next-line no-control-regex -- refusing control characters is what this regex is for
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f]+$/;
const idParams = z.object({ id: z.string().min(1).max(255).regex(NO_CONTROL_CHARACTERS, 'not a video id').describe('the video id (its render id)') });
const listQuery = z.object({
  after: z.string().min(1).max(255).optional().describe('the id after which the page starts'),
  limit: z.coerce.number().int().min(0).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
});

/** Form fields (multipart or urlencoded: numbers as text) or JSON; files in multipart are the images. */
const createBody = specOnly(
  videoFieldsSchema.describe('multipart/form-data (input_reference as a file or text), a urlencoded form, or JSON; numbers may be strings'),
);
const createErrors = {
  400: 'Invalid input (error.param names the field)',
  409: 'Idempotency-Key reused with another body',
  413: 'An image or the body is too large',
  415: 'Unsupported content type',
  429: "This client's share of the waiting renders is full (Retry-After)",
  503: 'Too many renders waiting (Retry-After)',
};
const doc = <T extends object>(summary: string, schema: T) => ({ schema: { summary, tags: ['Videos'], ...schema } });

/** The body encodings the create routes take. */
const consumes = ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'];

/** How long DELETE waits for ComfyUI to be interrupted before answering 409 "still cancelling". */
const CANCEL_WAIT_MS = 30_000;

export async function registerVideos(app: FastifyInstance, ctx: ApiContext): Promise<void> {
  // Encapsulated: the form parsers and the video error shape apply to these routes only.
  await app.register(async (plainScope) => {
    const scope = plainScope.withTypeProvider<ZodTypeProvider>();
    // One limit for the whole body, however it is encoded (multipart is counted as it streams: video/body.ts).
    const bodyLimit = imageRouteLimits(ctx.config).video;
    await scope.register(multipart, {
      // A field may carry one base64 image; the parts together are counted against bodyLimit.
      limits: { fileSize: ctx.config.MAX_IMAGE_BYTES + 1, files: VIDEO_MAX_FILES, fields: 64, fieldSize: bodyLimitFor(ctx.config, 1) },
    });
    await scope.register(formbody, { bodyLimit });
    scope.addHook('onRoute', (route) => {
      route.bodyLimit ??= bodyLimit;
    });

    scope.setErrorHandler(videoErrorHandler);
    const submit = videoSubmitter(ctx, bodyLimit);
    registerCreateRoute(scope, ctx, submit);
    registerSyncRoute(scope, ctx, submit);
    registerJobRoutes(scope, ctx);
    registerContentRoutes(scope, ctx);
    registerDeleteRoute(scope, ctx);
  });
}

/** Every refusal in the video API's shape: FastAPI's `detail` plus an OpenAI-style `error` naming the field. */
function videoErrorHandler(thrown: FastifyError | RequestError | AdmissionRefusedError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const err = validationRequestError(thrown) ?? thrown;
  if (err instanceof AdmissionRefusedError) {
    req.log.warn({ waiting: err.waiting, limit: err.limit }, 'admission: refused');
    reply.header('Retry-After', String(err.retryAfterSeconds));
    return send(reply, err.status, videoError(err.status, err.message, undefined, { waiting: err.waiting, limit: err.limit }));
  }
  if (err instanceof RequestError) {
    req.log.info({ field: err.field, status: err.status }, err.message);
    const retryAfter = retryAfterOf(err);
    if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
    return send(reply, err.status, videoError(err.status, err.message, err.field || undefined));
  }
  const fe = err;
  if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fe instanceof SyntaxError) {
    return send(reply, 400, videoError(400, `request body is not valid JSON: ${fe.message}`, 'body'));
  }
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return send(
      reply,
      415,
      videoError(415, `unsupported content type ${req.headers['content-type'] ?? ''}: send multipart/form-data, a urlencoded form or JSON`, 'content-type'),
    );
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return send(reply, fe.statusCode, videoError(fe.statusCode, fe.message, 'body'));
  }
  req.log.error({ err }, 'unhandled error');
  return send(reply, 500, videoError(500, 'internal error (see the service log)'));
}

type SubmitVideo = (req: FastifyRequest, async: boolean) => Promise<{ normalized: NormalizedVideo; started: StartedRender }>;

/**
 * Parse, normalise and submit (renders/submit.ts: idempotency, admission, then the input images, then the
 * start). The async and the sync route start the same render: one name in the key's fingerprint.
 */
function videoSubmitter(ctx: ApiContext, bodyLimit: number): SubmitVideo {
  return async (req, async) => {
    const limits = { maxImageBytes: ctx.config.MAX_IMAGE_BYTES, maxImagePixels: ctx.config.MAX_IMAGE_PIXELS };
    const { fields, files } = await readVideoBody(req, { ...limits, maxBodyBytes: bodyLimit });
    req.body = undefined;
    const priority = requestPriority(req.headers['x-priority'], fields);
    const normalized = await normalizeVideoRequestOffLoop(fields, files, { defaultModel: ctx.config.DEFAULT_VIDEO_MODEL, random: Math.random, limits });
    for (const w of normalized.warnings) req.log.info({ warning: w }, 'request adjusted');
    // What an Idempotency-Key retry must repeat: the fields and the files' content (not their bytes).
    const body = { fields: { ...fields, input_reference: undefined, input_references: undefined }, images: normalized.images.map((i) => i.ref.sha256) };
    const started = await ctx.submitter.submit({
      route: 'v1.videos',
      request: normalized.request,
      images: normalized.images,
      idempotencyKey: idempotencyKey(req.headers),
      body,
      priority,
      webhook: {
        ...(typeof fields.webhook_url === 'string' ? { url: fields.webhook_url } : {}),
        field: 'webhook_url',
        async,
        event: 'video',
        resultPath: (id) => `/v1/videos/${encodeURIComponent(id)}/content`,
      },
      warnings: normalized.warnings,
    });
    normalized.images.length = 0;
    req.log.info(
      { renderId: started.renderId, model: normalized.request.model, frames: normalized.request.video.frames, attached: started.attached },
      'video render started',
    );
    return { normalized, started };
  };
}

/** `POST /v1/videos`: starts the render and answers the queued job at once. */
function registerCreateRoute(fastify: FastifyInstance, ctx: ApiContext, submit: SubmitVideo): void {
  const scope = fastify.withTypeProvider<ZodTypeProvider>();
  const createDoc = doc('Start a video render (answers the queued job at once)', {
    consumes,
    headers: specOnly(renderHeadersSchema),
    body: createBody,
    response: { 200: videoJobSchema, ...videoErrors(createErrors) },
  });
  scope.post('/v1/videos', createDoc, async (req, reply) => {
    const { normalized, started } = await submit(req, true);
    reply.header('X-Render-Id', started.renderId);
    if (started.attached) return readJob(ctx.renders.client, started.renderId).then((v) => v.job);
    return newJob(started.renderId, normalized);
  });
}

/** `POST /v1/videos/sync`: renders and answers the MP4; 504 (and the render cancelled) after VIDEO_SYNC_TIMEOUT_S. */
function registerSyncRoute(fastify: FastifyInstance, ctx: ApiContext, submit: SubmitVideo): void {
  const scope = fastify.withTypeProvider<ZodTypeProvider>();
  const syncDoc = doc('Render a video and answer its MP4 (X-Render-Id, X-Model, X-Inference-Time-S); 504 after VIDEO_SYNC_TIMEOUT_S', {
    consumes,
    headers: specOnly(renderHeadersSchema),
    body: createBody,
    response: {
      200: bytesResponse('The video', ['video/mp4']),
      ...videoErrors({ ...createErrors, 500: 'The render failed', 504: 'Timed out (the render is cancelled)' }),
    },
  });
  scope.post('/v1/videos/sync', syncDoc, async (req, reply) => {
    const requestId = `video_sync-${randomUUID()}`;
    const { normalized, started } = await submit(req, false);
    reply.header('X-Request-Id', requestId).header('X-Render-Id', started.renderId).header('X-Model', normalized.request.model);
    // A1111's interrupt / skip reach a video on the GPU too: a video has one item, so both stop it.
    const stop = async (): Promise<void> => {
      await started.handle.cancel();
    };
    const flight = ctx.inFlight.add({ renderId: started.renderId, startedAt: Date.now(), interrupt: stop, skip: stop });
    const onClose = (): void => {
      if (ctx.config.CANCEL_ON_DISCONNECT && !reply.raw.writableEnded) void started.handle.cancel().catch(() => undefined);
    };
    reply.raw.once('close', onClose);
    const timeoutS = ctx.config.VIDEO_SYNC_TIMEOUT_S;
    let timer: NodeJS.Timeout | undefined;
    try {
      const waiting = ctx.submitter.wait(started);
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutS * 1000);
      });
      const outcome = await Promise.race([waiting, timedOut]);
      if (outcome === 'timeout') {
        waiting.catch(() => undefined);
        // Nobody will collect it: stop the render (and its ComfyUI prompt) rather than leave it running.
        await started.handle.cancel().catch(() => undefined);
        return send(reply, 504, videoError(504, `Video generation timed out after ${timeoutS}s.`, undefined, { render_id: started.renderId }));
      }
      return await sendVideo(ctx, reply, outcome, started.renderId);
    } catch (err) {
      if (err instanceof RenderFailedError) return sendFailure(reply, err);
      throw err;
    } finally {
      clearTimeout(timer);
      flight.done();
      reply.raw.off('close', onClose);
    }
  });
}

/** `GET /v1/videos` and `GET /v1/videos/{id}`: the jobs as the client may see them. */
function registerJobRoutes(fastify: FastifyInstance, ctx: ApiContext): void {
  const scope = fastify.withTypeProvider<ZodTypeProvider>();
  const listDoc = doc('List video jobs', {
    querystring: listQuery,
    response: { 200: videoPageSchema, ...videoErrors({ 400: 'A query value is not valid (param names it)' }) },
  });
  scope.get('/v1/videos', listDoc, async (req) => {
    try {
      return await listJobs(ctx.renders.client, req.query, viewerOf(req));
    } catch (err) {
      if (err instanceof VideoNotFoundError) throw new RequestError(400, 'after', err.message);
      throw err;
    }
  });

  const showDoc = doc('One video job (a failed job answers with its error status)', {
    params: idParams,
    response: {
      200: videoJobSchema,
      ...videoErrors({ 404: 'No such video (or it was deleted)' }),
      '4xx': videoJobSchema.describe('A failed job, with the status of its error'),
      '5xx': videoJobSchema.describe('A failed job, with the status of its error'),
    },
  });
  scope.get('/v1/videos/:id', showDoc, async (req, reply) => {
    const { id } = req.params;
    const view = await readOr404(ctx, req, reply, id);
    if (!view) return reply;
    if (view.failedStatus !== undefined) return reply.code(view.failedStatus).send(view.job);
    return view.job;
  });
}

/** `GET /v1/videos/{id}/content` (the MP4, streamed) and the remix route, which is not offered. */
function registerContentRoutes(fastify: FastifyInstance, ctx: ApiContext): void {
  const scope = fastify.withTypeProvider<ZodTypeProvider>();
  const contentDoc = doc('The MP4 of a completed video (streamed)', {
    params: idParams,
    querystring: videoContentQuerySchema,
    response: {
      200: bytesResponse('The video', ['video/mp4']),
      ...videoErrors({
        400: 'variant other than video',
        404: 'No such video, or still rendering',
        410: 'No longer in the blob store',
        422: 'The video failed',
      }),
    },
  });
  scope.get('/v1/videos/:id/content', contentDoc, async (req, reply) => {
    const { id } = req.params;
    // The OpenAI API's `variant` (video, thumbnail, spritesheet): only the video is rendered here.
    const variant = req.query.variant;
    if (variant !== undefined && variant !== 'video') {
      return send(
        reply,
        400,
        videoError(400, `variant: ${JSON.stringify(variant)} is not offered; only "video" (the MP4) is, no thumbnail or spritesheet is rendered`, 'variant'),
      );
    }
    const view = await readOr404(ctx, req, reply, id);
    if (!view) return reply;
    if (view.job.status === 'failed') return send(reply, 422, videoError(422, `Video generation failed: ${view.job.error?.message ?? ''}`.trim(), 'id'));
    if (!view.result)
      return send(reply, 404, videoError(404, 'Generation is still in-progress', 'id', { status: view.job.status, progress: view.job.progress }));
    return sendVideo(ctx, reply, view.result, id);
  });

  // Remix (the OpenAI API's new video from an earlier one with a changed prompt) is not offered: a clear
  // 4xx rather than a bare 404, so clients can tell it from an unknown video.
  const remixDoc = doc('Remix: not offered (always 400; create a new video instead)', {
    params: idParams,
    response: videoErrors({ 400: 'Remix is not offered' }),
  });
  scope.post('/v1/videos/:id/remix', remixDoc, async (req, reply) => {
    const { id } = req.params;
    return send(reply, 400, videoError(400, `remix is not offered: create a new video (POST /v1/videos) with the new prompt; video ${id} is unchanged`, 'id'));
  });
}

/** `DELETE /v1/videos/{id}`: a queued or running job is cancelled (ComfyUI interrupted) first. */
function registerDeleteRoute(fastify: FastifyInstance, ctx: ApiContext): void {
  const scope = fastify.withTypeProvider<ZodTypeProvider>();
  const deleteDoc = doc('Delete a video job; a queued or running one is cancelled (ComfyUI interrupted) first', {
    params: idParams,
    response: {
      200: videoDeletedSchema,
      ...videoErrors({ 404: 'No such video (or it was deleted)' }),
      ...videoErrors({ 409: 'Cancellation still under way' }),
    },
  });
  scope.delete('/v1/videos/:id', deleteDoc, async (req, reply) => {
    const { id } = req.params;
    const view = await readOr404(ctx, req, reply, id);
    if (!view) return reply;
    const handle = ctx.renders.handle(id);
    if (view.job.status === 'queued' || view.job.status === 'in_progress') {
      await handle.cancel();
      // The workflow ends only after its GPU activity has interrupted the prompt in ComfyUI.
      const closed = await Promise.race([
        handle.result().then(
          () => true,
          () => true,
        ),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), CANCEL_WAIT_MS).unref()),
      ]);
      if (!closed) return send(reply, 409, videoError(409, `cancellation of video ${id} is still under way`, 'id'));
    } else {
      // A finished job: its record goes (vLLM-Omni deletes it); blobs are content-addressed and may be shared.
      await ctx.renders.client.workflowService
        .deleteWorkflowExecution({ namespace: ctx.config.TEMPORAL_NAMESPACE, workflowExecution: { workflowId: id } })
        .catch((err: unknown) => {
          req.log.warn({ err, id }, 'could not delete the finished render');
        });
    }
    req.log.info({ renderId: id, was: view.job.status }, 'video deleted');
    return { id, deleted: true, object: 'video.deleted' } as const;
  });
}

/** The job `id` as `req`'s client may see it, or a 404 already sent (undefined). */
async function readOr404(ctx: ApiContext, req: FastifyRequest, reply: FastifyReply, id: string) {
  try {
    const view = await readJob(ctx.renders.client, id, viewerOf(req));
    if (view.cancelled) {
      send(reply, 404, videoError(404, `video ${id} was deleted`, 'id'));
      return undefined;
    }
    return view;
  } catch (err) {
    if (err instanceof VideoNotFoundError) {
      send(reply, 404, videoError(404, err.message, 'id'));
      return undefined;
    }
    throw err;
  }
}

/** The render's MP4, streamed from the blob store, with the headers vLLM-Omni answers. */
async function sendVideo(ctx: ApiContext, reply: FastifyReply, result: RenderResult, renderId: string): Promise<FastifyReply> {
  const ref = result.outputs.find((o) => o.mime.startsWith('video/'));
  if (!ref) return send(reply, 500, videoError(500, `render ${renderId} produced no video`));
  let stream;
  try {
    stream = await ctx.blobs.openRead(ref.sha256);
  } catch (err) {
    if (err instanceof BlobNotFoundError) return send(reply, 410, videoError(410, `the video of ${renderId} is no longer in the blob store`, 'id'));
    throw err;
  }
  const video = result.request.kind === 'video' ? result.request.video : undefined;
  // Streamed from the blob file: a 500 MB video never sits in memory.
  return reply
    .type(ref.mime)
    .header('Content-Length', String(ref.size))
    .header('Content-Disposition', `inline; filename="${renderId}.mp4"`)
    .header('X-Render-Id', renderId)
    .header('X-Model', result.request.model)
    .header('X-Inference-Time-S', inferenceSeconds(result).toFixed(3))
    .header('X-Video-Size', `${result.request.width}x${result.request.height}`)
    .header('X-Video-Frames', String(video?.frames ?? ''))
    .header('X-Video-Fps', String(video?.fps ?? ''))
    .send(stream);
}

function sendFailure(reply: FastifyReply, err: RenderFailedError): FastifyReply {
  reply.log.warn({ renderId: err.renderId, kind: err.kind }, err.message);
  const { comfy_message: comfyMessage, ...where } = err.fields;
  return send(
    reply,
    err.status,
    videoError(err.status, err.message, where.input, {
      render_id: err.renderId,
      type: err.kind,
      ...where,
      ...(comfyMessage ? { comfy_message: comfyMessage } : {}),
    }),
  );
}

/** The job object of a render this call just started (no round trip to Temporal). */
function newJob(renderId: string, n: NormalizedVideo): VideoJob {
  const r = n.request;
  const v = r.video;
  return queuedJob({
    id: renderId,
    model: r.model,
    prompt: r.prompt,
    size: `${r.width}x${r.height}`,
    frames: v.frames,
    fps: v.fps,
    createdAt: Math.floor(Date.now() / 1000),
    warnings: n.warnings,
  });
}
