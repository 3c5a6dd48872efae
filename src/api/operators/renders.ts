/**
 * Operator routes over HTTP — the same operations as `comfy-durable renders …` (src/operators):
 *   GET  /renders                      list (status, outcome, model, kind, since, until, replayOf, limit, cursor)
 *   GET  /renders/{id}                 timeline (stages, attempts, request, graphs, prompts, outputs, reason)
 *   GET  /renders/{id}/outputs/{n}     output image n (0-based) from the blob store
 *   POST /renders/{id}/replay          {newSeed?: boolean} → 202 the new render, linked to the original
 *   POST /renders/{id}/cancel          → 202, or 409 when the render is not running
 * and the gallery page at `/` (src/api/gallery: static HTML + vanilla JS, no build step).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { isGrpcServiceError } from '@temporalio/client';
import { z } from 'zod';
import { BlobNotFoundError } from '../../blobs/store.ts';
import type { Config } from '../../config/config.ts';
import { NotReplayableError, OutputNotFoundError, RenderNotFoundError, RenderNotRunningError, RenderOperators } from '../../operators/operators.ts';
import { cursorSchema, renderFiltersSchema } from '../../operators/query.ts';
import { RequestError } from '../../errors/request-error.ts';
import { errorBody, sendError } from '../http-errors.ts';
import { TEMPORAL_UI_PATH } from '../temporal-ui-proxy.ts';
import type { ApiContext } from '../context.ts';
import { viewerOf } from '../clients.ts';
import { trimTrailingSlashes } from '../../text/trim.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { a1111ErrorSchema, bytesResponse } from '../openapi-shapes.ts';
import { cancelAnswerSchema, renderPageSchema, renderTimelineSchema, replayAnswerSchema } from './renders-schemas.ts';

const galleryDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'gallery');

const listQuerySchema = renderFiltersSchema.extend({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: cursorSchema.optional(),
  /** `0` skips reading the outcome (reason, outputs, what happened) of closed renders: a faster, visibility-only list. */
  details: z.enum(['0', '1']).default('1'),
  /**
   * Renders by what happened (completed, partial, interrupted, skipped, blank, failed, failed:<class>). The
   * earlier `outcome=0|1` (now `details`) is still read as such.
   */
  outcome: z.union([z.enum(['0', '1']), renderFiltersSchema.shape.outcome.unwrap()]).optional(),
});
// Temporal accepts any workflow id; ours are `render-…`. Bound the length and refuse control characters.
// eslint-disable-next-line no-control-regex -- refusing control characters is what this regex is for
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f]+$/;
const renderId = z.string().min(1).max(255).regex(NO_CONTROL_CHARACTERS, 'not a render id').describe('the render id (X-Render-Id)');
const idParams = z.object({ id: renderId });
const outputParams = z.object({ id: renderId, n: z.string().describe('output number, 0-based (decimal digits)') });
// Decimal digits only: `0x0`, `1e1` or ` 1` name no output (z.coerce would read them as 0, 10, 1).
const OUTPUT_NUMBER = /^\d{1,5}$/;
// gRPC UNKNOWN and INVALID_ARGUMENT: how Temporal refuses a list cursor it cannot read.
const CURSOR_REFUSED_CODES = new Set<number>([2, 3]);
const replayBody = z.strictObject({ newSeed: z.boolean().optional() }).nullish().describe('Optional; newSeed: true renders with a new seed');

/**
 * The Temporal UI base URL for links: one configured explicitly (a UI behind its own login, in production),
 * else the embedded UI when this front serves it at /temporal (behind the front's own guards). Never the
 * UI process's own port, which has no login and no Host check.
 */
export function temporalUiUrl(config: Pick<Config, 'TEMPORAL_UI_URL'>, embeddedUi: boolean): string | undefined {
  if (config.TEMPORAL_UI_URL) return trimTrailingSlashes(config.TEMPORAL_UI_URL);
  return embeddedUi ? TEMPORAL_UI_PATH : undefined;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

// Scripts and styles only from this origin, no inline code: even a prompt that slipped past the page's
// escaping could not run. Images may be blob: URLs (thumbnails fetched with a bearer token).
const GALLERY_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const extensionFor = (mime: string): string => ({ 'image/jpeg': 'jpg', 'image/webp': 'webp', 'video/mp4': 'mp4', 'video/webm': 'webm' })[mime] ?? 'png';

const notFoundAnswer = a1111ErrorSchema.describe('No such render (or output)');
const doc = <T extends object>(summary: string, schema: T) => ({ schema: { summary, tags: ['Renders'], ...schema } });

function notFound(reply: FastifyReply, message: string, field = 'id'): FastifyReply {
  return sendError(reply, 404, errorBody('HTTPException', message, { field }));
}

// eslint-disable-next-line max-lines-per-function -- a plugin of the renders routes, each a short handler with its schema; nested handlers count in its lines
export function registerRenders(fastify: FastifyInstance, ctx: ApiContext): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const ops = new RenderOperators({
    client: ctx.renders.client,
    namespace: ctx.config.TEMPORAL_NAMESPACE,
    blobs: ctx.blobs,
    logger: ctx.logger.child({ component: 'operators' }),
    submitter: ctx.submitter,
  });

  const mapError = (reply: FastifyReply, err: unknown): FastifyReply => {
    if (err instanceof RenderNotFoundError) return notFound(reply, err.message);
    if (err instanceof OutputNotFoundError) return notFound(reply, err.message, 'n');
    if (err instanceof BlobNotFoundError) return notFound(reply, `output image is missing from the blob store: ${err.message}`, 'n');
    if (err instanceof RenderNotRunningError) return sendError(reply, 409, errorBody('HTTPException', err.message, { field: 'id', status: err.status }));
    if (err instanceof NotReplayableError) return sendError(reply, 422, errorBody('HTTPException', err.message, { field: 'id' }));
    throw err;
  };

  const listDoc = doc('List renders, newest first (filters, pages)', {
    querystring: listQuerySchema,
    response: { 200: renderPageSchema, 400: a1111ErrorSchema.describe('A filter or the cursor is not valid (field names it)') },
  });
  app.get('/renders', listDoc, async (req) => {
    const { limit, cursor, details, outcome, ...rest } = req.query;
    const legacyFlag = outcome === '0' || outcome === '1' ? outcome : undefined;
    const filters = { ...rest, ...(outcome !== undefined && legacyFlag === undefined ? { outcome } : {}) };
    const withOutcome = (legacyFlag ?? details) === '1';
    try {
      return await ops.list(filters, { pageSize: limit, cursor, withOutcome, viewer: viewerOf(req) });
    } catch (err) {
      // A cursor of the right alphabet that Temporal cannot read (`AAAA`) fails as INVALID_ARGUMENT or even
      // UNKNOWN: when the same list without it works, the cursor was the problem, and the client's fault.
      if (cursor !== undefined && isGrpcServiceError(err) && CURSOR_REFUSED_CODES.has(err.code)) {
        const withoutCursor = await ops.list(filters, { pageSize: 1, withOutcome: false, viewer: viewerOf(req) }).then(
          () => true,
          () => false,
        );
        if (withoutCursor) throw new RequestError(400, 'cursor', 'cursor: not a cursor returned by this API');
      }
      throw err;
    }
  });

  const showDoc = doc('One render: stages, attempts, request, graphs, prompts, outputs, reason', {
    params: idParams,
    response: { 200: renderTimelineSchema, 404: notFoundAnswer },
  });
  app.get('/renders/:id', showDoc, async (req, reply) => {
    const { id } = req.params;
    try {
      return await ops.show(id, viewerOf(req));
    } catch (err) {
      return mapError(reply, err);
    }
  });

  const outputDoc = doc('Output n of a render (image or video bytes; content-addressed, cacheable)', {
    params: outputParams,
    response: { 200: bytesResponse('The image or video', ['image/png', 'image/jpeg', 'image/webp', 'video/mp4', 'video/webm']), 404: notFoundAnswer },
  });
  app.get('/renders/:id/outputs/:n', outputDoc, async (req, reply) => {
    const { id, n: nText } = req.params;
    if (!OUTPUT_NUMBER.test(nText)) return notFound(reply, `render ${id} has no output ${JSON.stringify(nText.slice(0, 20))}`, 'n');
    const n = Number(nText);
    try {
      const ref = (await ops.outputs(id, viewerOf(req)))[n];
      // Videos are streamed from the blob store, never read whole.
      const video = ref?.mime.startsWith('video/') === true;
      const { bytes } = video ? { bytes: await ctx.blobs.openRead(ref.sha256) } : await ops.output(id, n, viewerOf(req));
      const mime = ref?.mime ?? 'image/png';
      // Content-addressed: the bytes behind a sha256 never change.
      reply
        .type(mime)
        .header('Cache-Control', 'private, max-age=86400')
        // The bytes are a client's: a browser must never read them as anything but their declared type.
        .header('X-Content-Type-Options', 'nosniff')
        .header('Content-Disposition', `inline; filename="${id}-${n}.${extensionFor(mime)}"`);
      if (ref) reply.header('ETag', `"${ref.sha256}"`);
      if (video) reply.header('Content-Length', String(ref.size));
      return reply.send(bytes);
    } catch (err) {
      return mapError(reply, err);
    }
  });

  const replayDoc = doc('Replay a render with the same inputs (202: the new render, linked to the original)', {
    params: idParams,
    body: replayBody,
    response: { 202: replayAnswerSchema, 404: notFoundAnswer, 422: a1111ErrorSchema.describe('Not replayable (its input images are gone)') },
  });
  app.post('/renders/:id/replay', replayDoc, async (req, reply) => {
    const { id } = req.params;
    const body = req.body;
    try {
      const started = await ops.replay(id, { newSeed: body?.newSeed ?? false, viewer: viewerOf(req) });
      req.log.info({ renderId: started.renderId, replayOf: id }, 'replay started');
      return reply.code(202).header('X-Render-Id', started.renderId).send(started);
    } catch (err) {
      return mapError(reply, err);
    }
  });

  const cancelDoc = doc('Cancel a running render (ComfyUI is interrupted)', {
    params: idParams,
    response: { 202: cancelAnswerSchema, 404: notFoundAnswer, 409: a1111ErrorSchema.describe('The render is not running (status says what it is)') },
  });
  app.post('/renders/:id/cancel', cancelDoc, async (req, reply) => {
    const { id } = req.params;
    try {
      const res = await ops.cancel(id, viewerOf(req));
      return reply.code(202).send(res);
    } catch (err) {
      return mapError(reply, err);
    }
  });

  // The gallery: read once at start-up; no build step, no templating beyond two escaped attributes.
  const html = readFileSync(path.join(galleryDir, 'index.html'), 'utf8')
    .replace('{{TEMPORAL_UI_URL}}', escapeHtml(temporalUiUrl(ctx.config, ctx.temporalUi !== undefined) ?? ''))
    .replace('{{TEMPORAL_NAMESPACE}}', escapeHtml(ctx.config.TEMPORAL_NAMESPACE));
  const assets: Record<string, { type: string; body: string }> = {
    'app.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(path.join(galleryDir, 'app.js'), 'utf8') },
    'style.css': { type: 'text/css; charset=utf-8', body: readFileSync(path.join(galleryDir, 'style.css'), 'utf8') },
    'favicon.svg': { type: 'image/svg+xml', body: readFileSync(path.join(galleryDir, 'favicon.svg'), 'utf8') },
  };
  app.get(
    '/',
    doc('The gallery page (open without the token; it asks for the token itself)', { response: { 200: bytesResponse('HTML', ['text/html']) } }),
    async (_req, reply) => reply.type('text/html; charset=utf-8').header('Content-Security-Policy', GALLERY_CSP).header('Cache-Control', 'no-cache').send(html),
  );
  const assetDoc = doc("The gallery page's script, style sheet and icon", {
    params: z.object({ file: z.string().describe('app.js, style.css or favicon.svg') }),
    response: { 200: bytesResponse('The file', ['text/javascript', 'text/css', 'image/svg+xml']), 404: notFoundAnswer },
  });
  app.get('/gallery/:file', assetDoc, async (req, reply) => {
    const file = req.params.file;
    const asset = Object.hasOwn(assets, file) ? assets[file] : undefined;
    if (!asset) return notFound(reply, 'no such file', 'file');
    return reply.type(asset.type).header('Cache-Control', 'no-cache').send(asset.body);
  });
}
