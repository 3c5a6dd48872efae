/**
 * OpenAI's error envelope for every `/v1/*` answer: `{error: {message, type, param, code}}`. The OpenAI SDKs
 * show `error.message` (a 401 without it reads as an empty error) and map `type`/`param`/`code` onto their
 * exception. The rest of the front answers in A1111's envelope (http-errors.ts) or FastAPI's `{detail}`; rather
 * than teach every guard (Host, origin, token, body limits, admission, not found) a second shape, one `onSend`
 * hook rewrites those bodies on `/v1/*` paths. `detail` is kept beside `error` for FastAPI-style clients.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

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
