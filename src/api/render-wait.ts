/**
 * The part every synchronous A1111 render route shares: submit the normalised request (renders/submit.ts:
 * idempotency, admission, input images, start), register the render for interrupt / skip / progress, wait,
 * and map a failed render to A1111's error envelope. Refusals (a reused key, a full queue, a request no graph
 * can be built for) are errors the server's handler answers in A1111's envelope.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DecodedImage } from '../images/decode.ts';
import type { SizeFieldNames } from '../contracts/history-size.ts';
import { releaseBodySlot } from './body-gate.ts';
import { errorBody, sendError } from './http-errors.ts';
import { RenderFailedError } from '../renders/render-service.ts';
import type { ApiContext } from './context.ts';
import { idempotencyKey, webhookUrlHeader } from './request-headers.ts';
import type { RenderRequest, RenderResult } from '../contracts/render.ts';
import type { WebhookOption } from '../renders/webhook-target.ts';
import { interruptSignal, skipSignal } from '../contracts/workflows.ts';

export interface Finished {
  result: RenderResult;
  renderId: string;
}

export interface AnswerOptions {
  priority?: number;
  /** How this protocol answers a failed render; default A1111's envelope. */
  sendFailure?: (reply: FastifyReply, err: RenderFailedError) => FastifyReply;
}

/**
 * Resolves to the route's answer, built by `answer` from the finished render, or to the reply already sent (an
 * error answer). `answer` may run ahead of the render's close, on the result its completion carries, and must
 * be free of effects (RenderService.answer): the route sends what it returns once the render is closed.
 */
export async function startAndAnswer<T>(
  ctx: ApiContext,
  req: FastifyRequest,
  reply: FastifyReply,
  /** The entry point's name in the Idempotency-Key fingerprint (`sdapi.txt2img`, …). */
  route: string,
  normalized: { request: RenderRequest; images: DecodedImage[]; fields?: SizeFieldNames },
  answer: (finished: Finished) => Promise<T>,
  { priority, sendFailure = sendA1111RenderFailure }: AnswerOptions = {},
): Promise<T | FastifyReply> {
  const started = await ctx.submitter.submit({
    route,
    request: normalized.request,
    images: normalized.images,
    ...(normalized.fields ? { fields: normalized.fields } : {}),
    idempotencyKey: idempotencyKey(req.headers),
    body: req.body,
    ...(priority !== undefined ? { priority } : {}),
    ...webhookOption(req),
  });
  // The images are in the blob store and the workflow has the request: drop the base64 body and the decoded
  // bytes, or every client waiting for its render pins ~2.4× its image size (the memory budget: 300 MB
  // with 100 clients carrying 2 MB images).
  normalized.images.length = 0;
  req.body = undefined;
  releaseBodySlot(req);
  reply.header('X-Render-Id', started.renderId);
  req.log.info({ renderId: started.renderId, model: normalized.request.model, attached: started.attached }, 'render started');

  const flight = ctx.inFlight.add({
    renderId: started.renderId,
    startedAt: Date.now(),
    interrupt: async () => {
      await started.handle.signal(interruptSignal);
    },
    skip: async () => {
      await started.handle.signal(skipSignal);
    },
  });
  // By default a client that goes away does not cancel its render: the result stays retrievable and an
  // Idempotency-Key retry attaches to it.
  const onClose = (): void => {
    if (reply.raw.writableEnded) return;
    flight.detach(); // this client waits no more (the render stays listed for interrupt until it ends)
    if (!ctx.config.CANCEL_ON_DISCONNECT) return;
    // Other clients of this front (Idempotency-Key retries) still wait for these images. (Clients of other
    // front replicas are not known here: with several replicas, prefer CANCEL_ON_DISCONNECT=false.)
    if (ctx.inFlight.clients(started.renderId) > 0) {
      req.log.info({ renderId: started.renderId }, 'client disconnected: other clients wait on the render, not cancelling');
      return;
    }
    req.log.info({ renderId: started.renderId }, 'client disconnected: cancelling render');
    void started.handle.cancel().catch(() => undefined);
  };
  // The response stream (not the request) closes when the client goes away before we answer.
  reply.raw.once('close', onClose);
  try {
    return await ctx.submitter.answer(started, (result) => answer({ result, renderId: started.renderId }));
  } catch (err) {
    if (err instanceof RenderFailedError) {
      req.log.warn({ renderId: err.renderId, kind: err.kind }, err.message);
      return sendFailure(reply, err);
    }
    throw err;
  } finally {
    flight.done();
    reply.raw.off('close', onClose);
  }
}

/** A synchronous image route's webhook: only when the client names one (X-Webhook-URL); no default, it waits. */
function webhookOption(req: FastifyRequest): { webhook?: WebhookOption } {
  const url = webhookUrlHeader(req.headers);
  return url === undefined ? {} : { webhook: { url, field: 'X-Webhook-URL', async: false, event: 'image' } };
}

/** Base64 of each output blob, in order. */
export async function outputImages(ctx: ApiContext, result: RenderResult): Promise<string[]> {
  return Promise.all(result.outputs.map(async (o) => (await ctx.blobs.get(o.sha256)).toString('base64')));
}

/** A1111's envelope: `detail` is our sentence, `errors` ComfyUI's own message; node and input say where. */
export function sendA1111RenderFailure(reply: FastifyReply, err: RenderFailedError): FastifyReply {
  const { comfy_message: comfyMessage, ...where } = err.fields;
  return sendError(
    reply,
    err.status,
    errorBody(err.kind, err.message, { errors: comfyMessage ?? err.message, render_id: err.renderId, ...where, details: err.details }),
  );
}
