/**
 * The HTTP front (Fastify): A1111 routes and operations. It validates and resolves requests, stores input
 * images as blobs, starts workflows and turns results back into A1111 answers. It renders nothing itself.
 */
import { registerBodyGate } from './body-gate.ts';
import { answerClientError } from './client-errors.ts';
import { registerDrainRefusal } from './drain.ts';
import { closeSilentSockets, perAddressShare, shareConnections } from '../fair/connections.ts';
import { closeBytePool } from '../bytes/pool.ts';
import http from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { RequestError, toA1111ErrorBody } from './a1111/errors.ts';
import { retryAfterOf } from '../errors/request-error.ts';
import { errorBody, sendError } from './http-errors.ts';
import type { ApiContext, ApiDeps } from './context.ts';
import { registerA1111 } from './a1111/plugin.ts';
import { registerOps } from './operators/ops.ts';
import { registerRenders } from './operators/renders.ts';
import { registerVideos } from './video/plugin.ts';
import { registerOpenAiImages } from './openai/plugin.ts';
import { registerComfyUi } from './comfyui/routes.ts';
import { registerWorkflowFiles } from './workflow-files/routes.ts';
import { isV1Path, openAiError, registerOpenAiErrorEnvelope, sendOpenAiError } from './openai/errors.ts';
import { InFlight } from './in-flight.ts';
import { loadApiKeys } from '../auth/keys.ts';
import { registerClientContext, registerKeyGuard } from './clients.ts';
import { assertJsonDepth } from './body-shape.ts';
import { AdmissionRefusedError } from '../renders/admission.ts';
import { createSubmitter } from '../renders/submit.ts';
import { registerLenientBodyParsers } from './body-parsers.ts';
import { originAllowed, registerCors } from './cors.ts';
import { DOCS_PREFIX, OPENAPI_PATH, registerOpenApi } from './openapi.ts';
import { registerHttpTracing } from '../tracing/http.ts';
import { registerTemporalUiProxy } from './temporal-ui-proxy.ts';
import { useZodRouteSchemas, validationRequestError } from './route-schemas.ts';
import { isLoopbackHost, normalizeHostName } from '../config/loopback.ts';

export { isLoopbackHost } from '../config/loopback.ts';

/** Retry-After of a 503 or 429 that names none of its own. */
const DEFAULT_RETRY_AFTER_S = 5;

export type { ApiContext, ApiDeps } from './context.ts';

// The gallery page and its assets hold no data (it asks for the token itself), so a browser can load it.
const OPEN_ROUTES = new Set(['/health', '/ready', '/internal/ping', '/', '/gallery/app.js', '/gallery/style.css', '/gallery/favicon.svg']);

export { authorized } from '../auth/api-token.ts';

/**
 * Node enforces requestTimeout and headersTimeout only when given at creation (Fastify sets them afterwards,
 * which Node ignores), and checks them on a sweep (30 s by default, which let idle sockets live 60-100 s):
 * create the server ourselves, sweeping often enough for the shorter of the two.
 */
function createHttpServer(config: ApiDeps['config'], handler: http.RequestListener): http.Server {
  const headersTimeout = Math.min(config.HTTP_HEADERS_TIMEOUT_MS, config.REQUEST_TIMEOUT_MS);
  const interval = Math.max(250, Math.min(30_000, Math.floor(headersTimeout / 2)));
  const server = http.createServer(
    {
      requestTimeout: config.REQUEST_TIMEOUT_MS,
      headersTimeout,
      keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: interval,
    },
    handler,
  );
  // Fair shares of the cap (connections.ts): at the cap a newcomer replaces the longest-idle connection, and
  // one address holds at most a quarter. Node's own cap stays, twice as high, as the bound on descriptors
  // (past it a flood is refused at accept, before any of our code runs).
  shareConnections(server, { max: config.HTTP_MAX_CONNECTIONS, perAddress: perAddressShare(config.HTTP_MAX_CONNECTIONS) });
  server.maxConnections = config.HTTP_MAX_CONNECTIONS * 2;
  closeSilentSockets(server, headersTimeout + interval);
  return server;
}

// eslint-disable-next-line max-lines-per-function -- the front's composition: hooks and plugins in registration order, which Fastify's encapsulation and hook order depend on
export async function buildServer(deps: ApiDeps): Promise<FastifyInstance> {
  // Typed as Fastify's logger, not pino's: Fastify infers the instance's logger type from it.
  const logger: FastifyBaseLogger = deps.logger.child({ component: 'api' });
  const app: FastifyInstance = Fastify({
    loggerInstance: logger,
    // Routes without images; image routes set their own (body-limits.ts).
    bodyLimit: deps.config.JSON_BODY_LIMIT_BYTES,
    // Receiving the request (headers and body) is bounded: a body trickled a byte a minute would otherwise hold
    // a connection and its buffer forever. Node clears this timer once the request is read, so a client
    // waiting minutes for its render is not cut off; nor is it by the socket idle timeout, which stays off.
    // Idle connections are bounded by the headers and keep-alive timeouts instead, and their number by a cap.
    requestTimeout: deps.config.REQUEST_TIMEOUT_MS,
    // Node enforces requestTimeout only when given at creation (Fastify sets it afterwards, which Node
    // ignores), and checks it on a sweep (30 s by default): create the server ourselves.
    serverFactory: (handler) => createHttpServer(deps.config, handler),
    connectionTimeout: 0,
    // A draining front refuses in each family's envelope, with Retry-After (drain.ts), not Fastify's bare 503.
    return503OnClosing: false,
    // Node's own 408, 431 and 400 (before any route) in an envelope too (client-errors.ts).
    clientErrorHandler: (err, socket) => answerClientError(logger, err, socket),
    // Bad URLs and over-long path parameters answer in A1111's envelope like every other error.
    // (These answers skip the hooks, the OpenAI envelope's included: /v1/* gets it here.)
    frameworkErrors: (err, req, reply) => {
      const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
      const message = status === 414 ? 'URL too long' : `bad request URL: ${err.message}`;
      if (isV1Path(req.url ?? '')) void sendOpenAiError(reply, status, openAiError(status, message, 'url'));
      else void sendError(reply, status, errorBody('HTTPException', message, { field: 'url' }));
    },
  });
  const submitter = createSubmitter({
    renders: deps.renders,
    config: deps.config,
    blobs: deps.blobs,
    logger: deps.logger,
    ...(deps.waitingRenders ? { waitingRenders: deps.waitingRenders } : {}),
    ...(deps.waitingRendersOf ? { waitingRendersOf: deps.waitingRendersOf } : {}),
    ...(deps.gpuLease ? { gpuLease: deps.gpuLease } : {}),
  });
  const ctx: ApiContext = { ...deps, inFlight: deps.inFlight ?? new InFlight(), submitter };

  // First of all hooks: a request refused by the checks below is traced too.
  if (deps.tracing) registerHttpTracing(app);
  // Next: a draining front refuses before any other check runs.
  registerDrainRefusal(app);
  // Before any route or guard: every error answer on /v1/* leaves in OpenAI's envelope.
  registerOpenAiErrorEnvelope(app);
  // Nothing this front serves is to be sniffed into another type (issue 27 I1: outputs are a client's bytes).
  app.addHook('onRequest', async (_req, reply) => {
    reply.header('X-Content-Type-Options', 'nosniff');
  });
  // Every 503 and 429 says when to come back (issue 27 L3): a full queue, a drain, a refused start. Those
  // that know better (admission, the byte pool) set their own Retry-After first.
  app.addHook('onSend', async (_req, reply, payload) => {
    if ((reply.statusCode === 503 || reply.statusCode === 429) && !reply.hasHeader('retry-after')) reply.header('Retry-After', String(DEFAULT_RETRY_AFTER_S));
    return payload;
  });

  registerLenientBodyParsers(app, { offLoopFromBytes: deps.config.LARGE_BODY_BYTES });

  // Bound to loopback (the default), only loopback host names are ours: a DNS-rebinding page that points its
  // own name at 127.0.0.1 sends its name in Host, and must not read renders or outputs.
  // ALLOWED_HOSTS: names a reverse proxy in front of this loopback front forwards in Host.
  // Names and IP addresses alike, compared in normalizeHostName's form.
  const extraHosts = new Set(deps.config.ALLOWED_HOSTS.map((h) => normalizeHostName(h) ?? h.toLowerCase()));
  if (isLoopbackHost(deps.config.HOST)) {
    app.addHook('onRequest', async (req, reply) => {
      const name = normalizeHostName(hostnameOf(req.headers.host)) ?? '';
      if (!isLoopbackHost(name) && !extraHosts.has(name)) {
        return sendError(
          reply,
          403,
          errorBody('HTTPException', `host ${req.headers.host ?? '(none)'} is not served here; use 127.0.0.1 or localhost`, { field: 'host' }),
        );
      }
    });
  }

  // A1111 clients are servers and send no Origin. A browser does, and its cross-site "simple" POSTs (text/plain
  // bodies) would otherwise let any web page start, cancel or replay renders on this loopback service.
  // CORS_ALLOW_ORIGINS (A1111's --cors-allow-origins) lets listed browser origins in; before the token check,
  // which a preflight (no credentials) would fail.
  registerCors(app, deps.config.CORS_ALLOW_ORIGINS);
  app.addHook('onRequest', async (req, reply) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
    if (originAllowed(req.headers.origin, deps.config.CORS_ALLOW_ORIGINS)) return;
    if (isCrossOrigin(req.headers.origin, req.headers.host)) {
      return sendError(reply, 403, errorBody('HTTPException', `cross-origin request from ${req.headers.origin} refused`, { field: 'origin' }));
    }
  });

  const keys = loadApiKeys(deps.config);
  if (keys.length > 0)
    registerKeyGuard(app, {
      keys,
      isOpen: (route) => OPEN_ROUTES.has(route) || route === OPENAPI_PATH || route === DOCS_PREFIX || route.startsWith(`${DOCS_PREFIX}/`),
    });
  // After the key guard: a request's client is its key when it has one.
  registerClientContext(app);

  // At most a few large bodies are read at once, and of those two parsed and decoded (one read while another is
  // decoded keeps the byte worker busy); the rest wait with their bytes in the socket.
  registerBodyGate(app, {
    largeBytes: deps.config.LARGE_BODY_BYTES,
    maxConcurrent: deps.config.MAX_CONCURRENT_LARGE_BODIES,
    maxDecoding: 2,
    minBytesPerSecond: deps.config.MIN_UPLOAD_BYTES_PER_S,
  });
  // The threads that parse request bytes (src/bytes/) stop with the front; a later use starts them again.
  app.addHook('onClose', async () => closeBytePool());

  // Before any handler reads a body: what recurses over it later (echoes, fingerprints) must not overflow.
  app.addHook('preValidation', async (req) => {
    if (req.body !== undefined) assertJsonDepth(req.body);
  });

  // Routes declare zod schemas: path and query parameters are checked by them, bodies by the routes.
  useZodRouteSchemas(app);

  app.setErrorHandler((thrown: FastifyError | RequestError | AdmissionRefusedError, req, reply) => {
    const err = validationRequestError(thrown) ?? thrown;
    if (err instanceof AdmissionRefusedError) {
      req.log.warn({ waiting: err.waiting, limit: err.limit }, 'admission: refused');
      reply.header('Retry-After', String(err.retryAfterSeconds));
      return sendError(reply, err.status, errorBody('HTTPException', err.message, { waiting: err.waiting, limit: err.limit }));
    }
    if (err instanceof RequestError) {
      req.log.info({ field: err.field, status: err.status }, err.message);
      const retryAfter = retryAfterOf(err);
      if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
      return reply.code(err.status).send(toA1111ErrorBody(err));
    }
    const fe = err;
    if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || fe instanceof SyntaxError) {
      return sendError(reply, 400, errorBody('HTTPException', `request body is not valid JSON: ${fe.message}`, { field: 'body' }));
    }
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const limit = req.routeOptions.bodyLimit ?? deps.config.JSON_BODY_LIMIT_BYTES;
      return sendError(reply, 413, errorBody('HTTPException', `request body is larger than ${limit} bytes`, { field: 'body', limit }));
    }
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendError(
        reply,
        415,
        errorBody('HTTPException', `unsupported content type ${req.headers['content-type'] ?? ''}: send application/json`, { field: 'content-type' }),
      );
    }
    if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
      return sendError(reply, fe.statusCode, errorBody('HTTPException', fe.message));
    }
    // The log has the error; the client learns that it is ours, not what our internals are called.
    req.log.error({ err }, 'unhandled error');
    return sendError(reply, 500, errorBody('InternalError', 'internal error (see the service log)', { errors: 'internal error' }));
  });

  // FastAPI's own 404 body, which clients (and A1111's API tests) compare against.
  app.setNotFoundHandler((_req, reply) => reply.code(404).type('application/json').send({ detail: 'Not Found' }));

  await registerOpenApi(app);
  registerA1111(app, ctx);
  registerOps(app, ctx);
  registerRenders(app, ctx);
  await registerVideos(app, ctx);
  await registerOpenAiImages(app, ctx);
  await registerComfyUi(app, ctx);
  registerWorkflowFiles(app, ctx);
  if (deps.temporalUi) registerTemporalUiProxy(app, deps.temporalUi);
  return app;
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
