/**
 * Workflow ids: `render-<ulid>` sorts by start time and reads well in the UI. With an Idempotency-Key the id
 * is derived from the key, so a client's retry attaches to the same render instead of rendering twice.
 */
import { createHash } from 'node:crypto';
import { ulid } from 'ulid';
import { canonicalJson } from './body-shape.ts';

export function newRenderId(): string {
  return `render-${ulid().toLowerCase()}`;
}

export function renderIdForKey(key: string): string {
  return `render-key-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/**
 * Hash of the request body a key was first used with: the same key with another body is a conflict. Keys are
 * sorted first, so the same body with its keys in another order is the same body.
 */
export function bodyFingerprint(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body ?? null)).digest('hex').slice(0, 32);
}
