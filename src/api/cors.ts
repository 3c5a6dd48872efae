/**
 * Browser access, opt-in: like A1111's `--cors-allow-origins`, the origins listed in CORS_ALLOW_ORIGINS get
 * CORS answers (preflights included) and may POST; every other cross-origin request stays refused (see the
 * cross-origin guard in server.ts). `*` allows any origin, as A1111's list does.
 */
import type { FastifyInstance } from 'fastify';
import { trimTrailingSlashes } from '../text/trim.ts';

export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (!origin || allowed.length === 0) return false;
  const o = trimTrailingSlashes(origin).toLowerCase();
  return allowed.some((a) => a === '*' || trimTrailingSlashes(a).toLowerCase() === o);
}

export function registerCors(app: FastifyInstance, allowed: readonly string[]): void {
  if (allowed.length === 0) return;
  app.addHook('onRequest', async (req, reply) => {
    const origin = req.headers.origin;
    if (!originAllowed(origin, allowed)) return;
    reply.header('Access-Control-Allow-Origin', origin!);
    reply.header('Access-Control-Allow-Credentials', 'true');
    reply.header('Vary', 'Origin');
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      reply.header('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS');
      reply.header('Access-Control-Allow-Headers', req.headers['access-control-request-headers'] ?? '*');
      reply.header('Access-Control-Max-Age', '600');
      return reply.code(200).send();
    }
  });
}
