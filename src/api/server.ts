/**
 * The HTTP front (Fastify): A1111 routes and operations. It validates and resolves requests, stores input
 * images as blobs, starts workflows and turns results back into A1111 answers. It renders nothing itself.
 */
import { timingSafeEqual } from 'node:crypto';
import { registerBodyGate } from './body-gate.ts';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { BlobStore } from '../blobs/store.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { RequestError, toA1111ErrorBody } from './a1111/errors.ts';
import { errorBody, sendError } from './http-errors.ts';
import type { HealthDeps } from './health.ts';
import type { OptionsStore } from './options-store.ts';
import type { RenderService } from './render-service.ts';
import { registerA1111Discovery } from './routes/a1111-discovery.ts';
import { registerA1111Render } from './routes/a1111-render.ts';
import { registerOps } from './routes/ops.ts';
import { registerRenders } from './routes/renders.ts';
import { InFlight } from './in-flight.ts';

export interface ApiDeps {
  config: Config;
  logger: Logger;
  blobs: BlobStore;
  renders: RenderService;
  options: OptionsStore;
  health: HealthDeps;
}

export interface ApiContext extends ApiDeps {
  inFlight: InFlight;
}

// The gallery page and its assets hold no data (it asks for the token itself), so a browser can load it.
const OPEN_ROUTES = new Set(['/health', '/internal/ping', '/', '/gallery/app.js', '/gallery/style.css', '/gallery/favicon.svg']);

export async function buildServer(deps: ApiDeps): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger.child({ component: 'api' }) as FastifyBaseLogger,
    bodyLimit: deps.config.BODY_LIMIT_BYTES,
    disableRequestLogging: false,
    // Renders take minutes: never cut a waiting client off at the HTTP layer.
    requestTimeout: 0,
    connectionTimeout: 0,
  });
  const ctx: ApiContext = { ...deps, inFlight: new InFlight() };

  // Node's fetch with a string body sends text/plain; A1111 would 422 it, we read it as the JSON it is.
  const jsonParser = app.getDefaultJsonParser('error', 'ignore');
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (req, body, done) => {
    jsonParser(req, String(body), done);
  });

  // Bound to loopback (the default), only loopback host names are ours: a DNS-rebinding page that points its
  // own name at 127.0.0.1 sends its name in Host, and must not read renders or outputs.
  if (isLoopbackHost(deps.config.HOST)) {
    app.addHook('onRequest', async (req, reply) => {
      if (!isLoopbackHost(hostnameOf(req.headers.host))) {
        return sendError(reply, 403, errorBody('HTTPException', `host ${req.headers.host ?? '(none)'} is not served here; use 127.0.0.1 or localhost`, { field: 'host' }));
      }
    });
  }

  // A1111 clients are servers and send no Origin. A browser does, and its cross-site "simple" POSTs (text/plain
  // bodies) would otherwise let any web page start, cancel or replay renders on this loopback service.
  app.addHook('onRequest', async (req, reply) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
    if (isCrossOrigin(req.headers.origin, req.headers.host)) {
      return sendError(reply, 403, errorBody('HTTPException', `cross-origin request from ${req.headers.origin} refused`, { field: 'origin' }));
    }
  });

  if (deps.config.API_TOKEN) {
    const token = deps.config.API_TOKEN;
    app.addHook('onRequest', async (req, reply) => {
      if (OPEN_ROUTES.has(req.url.split('?')[0] ?? '')) return;
      if (!authorized(req.headers.authorization, token)) {
        return sendError(reply, 401, errorBody('HTTPException', 'missing or invalid API token (Authorization: Bearer <token>, or Basic with the token as password)', { field: 'authorization' }));
      }
    });
  }

  // At most a few large bodies are read and decoded at once; the rest wait with their bytes in the socket.
  registerBodyGate(app, { largeBytes: deps.config.LARGE_BODY_BYTES, maxConcurrent: deps.config.MAX_CONCURRENT_LARGE_BODIES });

  app.setErrorHandler((err: FastifyError | RequestError, req, reply) => {
    if (err instanceof RequestError) {
      req.log.info({ field: err.field, status: err.status }, err.message);
      return reply.code(err.status).send(toA1111ErrorBody(err));
    }
    const fe = err as FastifyError;
    if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || fe instanceof SyntaxError) {
      return sendError(reply, 400, errorBody('HTTPException', `request body is not valid JSON: ${fe.message}`, { field: 'body' }));
    }
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return sendError(reply, 413, errorBody('HTTPException', `request body is larger than ${deps.config.BODY_LIMIT_BYTES} bytes`, { field: 'body' }));
    }
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendError(reply, 415, errorBody('HTTPException', `unsupported content type ${req.headers['content-type'] ?? ''}: send application/json`, { field: 'content-type' }));
    }
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      return sendError(reply, fe.statusCode, errorBody('HTTPException', fe.message));
    }
    req.log.error({ err }, 'unhandled error');
    return sendError(reply, 500, errorBody(err.name || 'Error', 'internal error', { errors: String(err.message) }));
  });

  registerA1111Discovery(app, ctx);
  registerA1111Render(app, ctx);
  registerOps(app, ctx);
  registerRenders(app, ctx);
  return app;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * `Bearer <token>`, or `Basic` whose password (or whole credential) is the token: Open WebUI and SillyTavern
 * can only send Basic auth, and A1111's own `--api-auth` is Basic.
 */
export function authorized(header: string | undefined, token: string): boolean {
  if (!header) return false;
  const [scheme, value = ''] = header.split(/\s+/, 2);
  if (scheme?.toLowerCase() === 'bearer') return sameSecret(value, token);
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const password = decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : decoded;
    return sameSecret(password, token);
  }
  return false;
}

export function isCrossOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (!origin || origin === 'null') return origin === 'null';
  try {
    return new URL(origin).host !== host;
  } catch {
    return true;
  }
}

/** The host name of a Host header value (`name:port`, `[v6]:port`). */
export function hostnameOf(host: string | undefined): string {
  if (!host) return '';
  try {
    return new URL(`http://${host}`).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return '';
  }
}

export function isLoopbackHost(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'localhost' || n.endsWith('.localhost') || n === '::1' || /^127(\.\d{1,3}){3}$/.test(n);
}
