/**
 * What every route of the fake shares with aiohttp's behaviour: bodies parsed as JSON whatever the content
 * type (a parse failure is the handler's exception, i.e. a 500), aiohttp's plain-text 500, Python truthiness.
 */
import type { FastifyReply } from 'fastify';

export const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class BodyParseError extends Error {}

/** aiohttp's `request.json()`: any content type, JSON or an exception (which the routes turn into 500). */
export function parseJsonBody(body: unknown): unknown {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : '';
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyParseError('invalid JSON body');
  }
}

/** aiohttp's unhandled-exception answer. */
export function internalError(reply: FastifyReply): FastifyReply {
  return reply.code(500).type('text/plain; charset=utf-8').send('500 Internal Server Error\n\nServer got itself in trouble');
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function pyTruthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}
