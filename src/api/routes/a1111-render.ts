/**
 * `POST /sdapi/v1/txt2img` and `/img2img`: validate and resolve the body (nothing is stored or started until
 * it fully passes), store input images as blobs, start the render workflow, wait, answer in A1111's shape.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { normalizeRequest, type DecodedImage } from '../a1111/normalize.ts';
import { buildInfo } from '../a1111/response.ts';
import { errorBody, sendError } from '../http-errors.ts';
import { releaseBodySlot } from '../body-gate.ts';
import { requestPriority } from '../priority.ts';
import { IdempotencyConflictError, RenderFailedError } from '../render-service.ts';
import type { ApiContext } from '../server.ts';

type Route = 'txt2img' | 'img2img';

export function registerA1111Render(app: FastifyInstance, ctx: ApiContext): void {
  const handler = (route: Route) => async (req: FastifyRequest, reply: FastifyReply) => {
    const priority = requestPriority(req.headers['x-priority'], req.body);
    const defaultModel = String(ctx.options.get('sd_model_checkpoint') ?? ctx.config.DEFAULT_MODEL);
    const normalized = normalizeRequest(route, req.body, {
      defaultModel,
      random: Math.random,
      limits: {
        maxImageBytes: ctx.config.MAX_IMAGE_BYTES,
        maxImagePixels: ctx.config.MAX_IMAGE_PIXELS,
        maxBatch: ctx.config.MAX_BATCH,
        maxExtraImages: ctx.config.MAX_EXTRA_IMAGES,
      },
      log: (msg, obj) => req.log.info(obj ?? {}, msg),
    });
    for (const w of normalized.warnings) req.log.info({ warning: w }, 'request adjusted');
    await storeImages(ctx, normalized.images);

    const idempotencyKey = headerValue(req.headers['idempotency-key']);
    let started;
    try {
      started = await ctx.renders.start(normalized.request, { idempotencyKey, body: req.body, priority });
    } catch (err) {
      if (err instanceof IdempotencyConflictError) {
        return sendError(reply, 409, errorBody('HTTPException', err.message, { field: 'Idempotency-Key' }));
      }
      throw err;
    }
    // The images are in the blob store and the workflow has the request: drop the base64 body and the decoded
    // bytes, or every client waiting for its render pins ~2.4× its image size (DESIGN §9 memory budget).
    normalized.images.length = 0;
    req.body = undefined;
    releaseBodySlot(req);
    reply.header('X-Render-Id', started.renderId);
    req.log.info({ renderId: started.renderId, model: normalized.request.model, attached: started.attached }, 'render started');

    const done = ctx.inFlight.add({
      renderId: started.renderId,
      startedAt: Date.now(),
      cancel: async () => {
        await started.handle.cancel();
      },
    });
    // By default a client that goes away does not cancel its render: the result stays retrievable and an
    // Idempotency-Key retry attaches to it.
    const onClose = (): void => {
      if (ctx.config.CANCEL_ON_DISCONNECT && !reply.raw.writableEnded) {
        req.log.info({ renderId: started.renderId }, 'client disconnected: cancelling render');
        void started.handle.cancel().catch(() => undefined);
      }
    };
    // The response stream (not the request) closes when the client goes away before we answer.
    reply.raw.once('close', onClose);
    try {
      const result = await ctx.renders.wait(started);
      const images = await Promise.all(result.outputs.map(async (o) => (await ctx.blobs.get(o.sha256)).toString('base64')));
      return {
        images,
        parameters: normalized.parameters,
        info: buildInfo(result.request, result, { renderId: started.renderId, warnings: normalized.warnings }),
      };
    } catch (err) {
      if (err instanceof RenderFailedError) {
        req.log.warn({ renderId: err.renderId, kind: err.kind }, err.message);
        // A1111's envelope: `detail` is our sentence, `errors` ComfyUI's own message; node and input say where.
        const { comfy_message: comfyMessage, ...where } = err.fields;
        return sendError(
          reply,
          err.status,
          errorBody(err.kind, err.message, { errors: comfyMessage ?? err.message, render_id: err.renderId, ...where, details: err.details }),
        );
      }
      throw err;
    } finally {
      done();
      reply.raw.off('close', onClose);
    }
  };

  // The handler releases its large-body slot itself, once the images are stored (api/body-gate.ts).
  app.post('/sdapi/v1/txt2img', { config: { keepsBodySlot: true } }, handler('txt2img'));
  app.post('/sdapi/v1/img2img', { config: { keepsBodySlot: true } }, handler('img2img'));
}

/**
 * In its own function on purpose: a loop variable in the route handler stays in the suspended async frame
 * (a stale generator register) for the whole render, pinning the last decoded image per waiting client.
 */
async function storeImages(ctx: ApiContext, images: DecodedImage[]): Promise<void> {
  for (const img of images) {
    await ctx.blobs.put(img.bytes, { mime: img.ref.mime, width: img.ref.width, height: img.ref.height });
  }
}

function headerValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s && s.trim() !== '' ? s.trim() : undefined;
}
