/**
 * Who a request is: the API key it presents (named keys with roles, src/auth/keys.ts) and the client it is
 * shared as (the key's name, else its remote address). Every request's handler runs inside its client
 * context (src/fair/client-context.ts), so the shared queues can share fairly and drop work whose client
 * has gone, and the submission service records the render's owner, without the routes passing either.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { identify, type ApiKey, type Principal } from '../auth/keys.ts';
import { runAsClient, type ClientContext } from '../fair/client-context.ts';
import { EVERYONE, ownerViewer, type Viewer } from '../renders/owner.ts';
import { errorBody, sendError } from './http-errors.ts';

const principals = new WeakMap<FastifyRequest, Principal>();
const contexts = new WeakMap<FastifyRequest, ClientContext>();

/** The key a request presented (undefined on a service without keys, and on open routes). */
export function principalOf(req: FastifyRequest): Principal | undefined {
  return principals.get(req);
}

/** What the request may see: everything for an operator key or a service without keys, else its own renders. */
export function viewerOf(req: FastifyRequest): Viewer {
  const p = principals.get(req);
  return p && p.role === 'client' ? ownerViewer(p.name) : EVERYONE;
}

/** The request's client context (made by the onRequest hook of registerClientContext; body parsers use it too). */
export function clientContextOf(req: FastifyRequest): ClientContext {
  let ctx = contexts.get(req);
  if (!ctx) {
    ctx = newContext(req, new AbortController());
    contexts.set(req, ctx);
  }
  return ctx;
}

function newContext(req: FastifyRequest, gone: AbortController): ClientContext {
  const p = principals.get(req);
  return { client: p ? `key:${p.name}` : `addr:${req.ip}`, signal: gone.signal, ...(p ? { owner: p.name, role: p.role } : {}) };
}

/** Runs `fn` as the request's client. */
export function asClientOf<T>(req: FastifyRequest, fn: () => T): T {
  return runAsClient(clientContextOf(req), fn);
}

export interface KeyGuardOptions {
  keys: readonly ApiKey[];
  /** Routes open without a key (health, the gallery's page and the API docs). */
  isOpen(route: string): boolean;
}

/** With keys configured, every route but the open ones needs one: 401 in A1111's envelope (and Basic challenge). */
export function registerKeyGuard(app: FastifyInstance, opts: KeyGuardOptions): void {
  app.addHook('onRequest', async (req, reply) => {
    const route = req.url.split('?')[0] ?? '';
    if (opts.isOpen(route)) return;
    const principal = identify(req.headers.authorization, opts.keys);
    if (principal) {
      principals.set(req, principal);
      return;
    }
    return refuseKey(req, reply);
  });
}

function refuseKey(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  // A1111's --api-auth answers 401 with a Basic challenge; clients that can retry with credentials need it.
  // Not for the gallery's own fetches (a browser sends Sec-Fetch-Mode): a Basic challenge there would pop
  // the browser's password dialog over the gallery's token form.
  const browserFetch = req.headers['sec-fetch-mode'] !== undefined && req.headers['sec-fetch-mode'] !== 'navigate';
  if (!browserFetch) reply.header('WWW-Authenticate', 'Basic realm="comfy-durable"');
  return sendError(
    reply,
    401,
    errorBody('HTTPException', 'missing or invalid API token (Authorization: Bearer <token>, or Basic with the token as password)', {
      field: 'authorization',
    }),
  );
}

/**
 * Each request gets its client context once it is authenticated; its signal fires when the connection closes
 * before the answer was sent (the client gave up). Handlers, and everything after validation, run inside it.
 */
export function registerClientContext(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    contexts.set(req, newContext(req, gone));
    done();
  });
  app.addHook('preValidation', (req, _reply, done) => {
    asClientOf(req, done);
  });
}

/** 403 for a client key on an operator-only route (shared options, the Temporal UI, bulk operations). */
export function refuseUnlessOperator(req: FastifyRequest, reply: FastifyReply, what: string): FastifyReply | undefined {
  const p = principals.get(req);
  if (!p || p.role === 'operator') return undefined;
  return sendError(reply, 403, errorBody('HTTPException', `${what} needs an operator key (key ${p.name} is a client key)`, { field: 'authorization' }));
}
