/**
 * OpenAI's error envelope for every `/v1/*` answer: `{error: {message, type, param, code}}`. The OpenAI SDKs
 * show `error.message` (a 401 without it reads as an empty error) and map `type`/`param`/`code` onto their
 * exception. The OpenAI routes answer their own errors in it (openAiErrorHandler: a RequestError already names
 * the OpenAI field, thrown by the adapter or by the resolver and submitter through the neutral request's
 * names). The guards that run before any route (Host, origin, token, body gate, not found) answer in the
 * front's envelope; one `onSend` hook gives those OpenAI's shape on `/v1/*` paths, moving fields, never
 * rewording messages. `detail` is kept beside `error` for FastAPI-style clients.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RequestError, retryAfterOf } from '../../errors/request-error.ts';
import { AdmissionRefusedError } from '../../renders/admission.ts';
import type { RenderFailedError } from '../../renders/render-service.ts';
import { validationRequestError } from '../route-schemas.ts';

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | number | null };
  detail?: string;
  [extra: string]: unknown;
}

/** OpenAI's `type` for an HTTP status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** A short machine-readable `code`, where OpenAI has a well-known one for the status. */
function openAiErrorCode(status: number, param: string | null): string | null {
  if (status === 401) return 'invalid_api_key';
  if (status === 404 && param === 'model') return 'model_not_found';
  if (status === 413) return 'payload_too_large';
  if (status === 415) return 'unsupported_media_type';
  if (status === 429) return 'rate_limit_exceeded';
  if (status === 503) return 'service_unavailable';
  return null;
}

export function openAiError(status: number, message: string, param?: string | null, extra: Record<string, unknown> = {}): OpenAiErrorBody {
  const p = param === undefined || param === '' ? null : param;
  return { ...extra, error: { message, type: openAiErrorType(status), param: p, code: openAiErrorCode(status, p) }, detail: message };
}

export function sendOpenAiError(reply: FastifyReply, status: number, body: OpenAiErrorBody): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}

/** Bodies rewritten: an error answer is small; anything larger is not one of ours. */
const MAX_REWRITE_CHARS = 256 * 1024;

/**
 * Rewrites error bodies on `/v1/*` into OpenAI's envelope: A1111's `{error: "<kind>", detail, field, …}` and
 * FastAPI's `{detail}`. Bodies that already carry an `error` object (the video routes) pass unchanged.
 */
export function registerOpenAiErrorEnvelope(app: FastifyInstance): void {
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode < 400 || !isV1Path(req.url)) return payload;
    if (typeof payload !== 'string' || payload.length > MAX_REWRITE_CHARS) return payload;
    if (!/json/i.test(String(reply.getHeader('content-type') ?? ''))) return payload;
    let body: unknown;
    try {
      body = JSON.parse(payload);
    } catch {
      return payload;
    }
    const rewritten = toOpenAiEnvelope(reply.statusCode, body, req.method, req.url);
    return rewritten ? JSON.stringify(rewritten) : payload;
  });
}

export function isV1Path(url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');
}

/** The OpenAI form of another envelope, or undefined when the body already is one (or is not an error). */
export function toOpenAiEnvelope(status: number, body: unknown, method: string, url: string): OpenAiErrorBody | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  if (b.error && typeof b.error === 'object') return undefined;
  const { error: _kind, detail, body: _body, errors: _errors, field, ...extra } = b;
  let message = typeof detail === 'string' && detail !== '' ? detail : `HTTP ${status}`;
  if (status === 404 && message === 'Not Found') message = `no route ${method} ${url.split('?')[0]}`;
  const param = typeof field === 'string' && field !== '' ? field : null;
  return openAiError(status, message, param, extra);
}

/** The OpenAI routes' error handler: every refusal in OpenAI's envelope, `param` the OpenAI field. */
export function openAiErrorHandler(thrown: FastifyError | RequestError | AdmissionRefusedError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const err = validationRequestError(thrown) ?? thrown;
  if (err instanceof AdmissionRefusedError) {
    req.log.warn({ waiting: err.waiting, limit: err.limit }, 'admission: refused');
    reply.header('Retry-After', String(err.retryAfterSeconds));
    return sendOpenAiError(reply, err.status, openAiError(err.status, err.message, null, { waiting: err.waiting, limit: err.limit }));
  }
  if (err instanceof RequestError) {
    req.log.info({ field: err.field, status: err.status }, err.message);
    const retryAfter = retryAfterOf(err);
    if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
    return sendOpenAiError(reply, err.status, openAiError(err.status, err.message, err.field, err.extra));
  }
  const fe = err;
  if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || fe instanceof SyntaxError) {
    return sendOpenAiError(reply, 400, openAiError(400, `request body is not valid JSON: ${fe.message}`, 'body'));
  }
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = req.routeOptions.bodyLimit;
    return sendOpenAiError(reply, 413, openAiError(413, `request body is larger than ${limit} bytes`, 'body', { limit }));
  }
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    const type = req.headers['content-type'] ?? '';
    return sendOpenAiError(
      reply,
      415,
      openAiError(415, `unsupported content type ${type}: send application/json (edits: or multipart/form-data)`, 'content-type'),
    );
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return sendOpenAiError(reply, fe.statusCode, openAiError(fe.statusCode, fe.message));
  }
  req.log.error({ err }, 'unhandled error');
  return sendOpenAiError(reply, 500, openAiError(500, 'internal error (see the service log)'));
}

/** A render that failed, in OpenAI's envelope: our sentence, ComfyUI's own message and where it failed beside it. */
export function sendOpenAiRenderFailure(reply: FastifyReply, err: RenderFailedError): FastifyReply {
  const { comfy_message: comfyMessage, ...where } = err.fields;
  return sendOpenAiError(
    reply,
    err.status,
    openAiError(err.status, err.message, null, { errors: comfyMessage ?? err.message, render_id: err.renderId, ...where, details: err.details }),
  );
}
