/**
 * Workflow ids: `render-<ulid>` sorts by start time and reads well in the UI. With an Idempotency-Key the id
 * is derived from the key, so a client's retry attaches to the same render instead of rendering twice.
 */
import { createHash } from 'node:crypto';
import { ulid } from 'ulid';
import { RequestError } from '../errors/request-error.ts';

/** Deeper than any body the front lets through (its own depth check runs first): refuse, never overflow. */
const MAX_CANONICAL_DEPTH = 64;

export function newRenderId(): string {
  return `render-${ulid().toLowerCase()}`;
}

/**
 * The render id of an Idempotency-Key, in its owner's room: two API keys that pick the same Idempotency-Key
 * get two renders (one must not attach to, and be answered with, the other's images). Without an owner (a
 * service without named keys) the id is the one it always was.
 */
export function renderIdForKey(key: string, owner?: string): string {
  const scoped = owner === undefined ? key : `${owner}\u0000${key}`;
  return `render-key-${createHash('sha256').update(scoped).digest('hex').slice(0, 32)}`;
}

/**
 * Hash of what a key was first used for: the entry point (`route`) and the request body. The same key on
 * another route, or with another body, is a conflict: an img2img must not be answered with the images of
 * the txt2img that used the key first. Keys are sorted first, so the same body with its keys in another
 * order is the same body.
 */
export function requestFingerprint(route: string, body: unknown): string {
  return createHash('sha256')
    .update(canonicalJson({ route, body: body ?? null }))
    .digest('hex')
    .slice(0, 32);
}

/**
 * JSON with object keys sorted at every level: the same body with its keys in another order is the same
 * request (an Idempotency-Key retry from a client that rebuilds its dict must attach, not get a 409).
 * Recursive, so callers bound the depth first; it refuses deeper input rather than overflow.
 */
export function canonicalJson(value: unknown, depth = 0): string {
  if (depth > MAX_CANONICAL_DEPTH) throw new RequestError(400, 'body', `body: JSON nested deeper than ${MAX_CANONICAL_DEPTH / 2} levels`);
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v, depth + 1)}`).join(',')}}`;
}
