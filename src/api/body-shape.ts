/**
 * Bounds on the shape of a parsed JSON body, checked before anything reads it: nesting depth and string
 * lengths. JSON.parse copes with deep nesting, but everything after it that recurses does not: the echoed
 * A1111 `parameters` (JSON.stringify), the Idempotency-Key fingerprint, zod. A 10 KB body nested 5000 deep
 * in `comments` rendered and then answered 500, the GPU work lost. The walk here is iterative, so it cannot
 * overflow itself; paths name the offending field.
 */
import { RequestError, type RequestErrorStatus } from './a1111/errors.ts';

/** Deeper than any real A1111 body (ControlNet units in `alwayson_scripts` nest about five levels). */
export const MAX_JSON_DEPTH = 32;

export interface BodyShapeLimits {
  maxDepth: number;
  /** Longest string allowed at `path` (dot path from the body's root). */
  maxStringChars(path: readonly (string | number)[]): number;
  /** Status for a string over its limit (default 422, a field that fails validation; 413 for images). */
  tooLongStatus?(path: readonly (string | number)[]): RequestErrorStatus;
}

/**
 * Throws a RequestError naming the first field that is nested too deep (400) or holds too long a string.
 * Bodies reach tens of MB, so the walk allocates nothing per element: one frame per open container (at most
 * `maxDepth`) and one path array, extended and shortened in place (the per-element path copies it once made
 * cost 1 GB and a minute for a 10 MB array).
 */
export function assertBodyShape(body: unknown, limits: BodyShapeLimits): void {
  const path: (string | number)[] = [];
  const checkString = (value: string): void => {
    const max = limits.maxStringChars(path);
    if (value.length > max) {
      const field = path.join('.') || 'body';
      throw new RequestError(limits.tooLongStatus?.(path) ?? 422, field, `${field}: must be at most ${max} characters (got ${value.length})`, { limit: max });
    }
  };
  if (typeof body === 'string') return checkString(body);
  if (body === null || typeof body !== 'object') return;
  if (limits.maxDepth <= 0) throw new RequestError(400, 'body', `body: JSON nested deeper than ${limits.maxDepth} levels`, { limit: limits.maxDepth });
  interface Frame {
    node: Record<string, unknown> | unknown[];
    /** An object's keys; undefined for an array (walked by index). */
    keys: string[] | undefined;
    next: number;
  }
  const frame = (node: object): Frame =>
    Array.isArray(node) ? { node, keys: undefined, next: 0 } : { node: node as Record<string, unknown>, keys: Object.keys(node), next: 0 };
  const stack: Frame[] = [frame(body)];
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    const size = f.keys ? f.keys.length : (f.node as unknown[]).length;
    if (f.next >= size) {
      stack.pop();
      if (stack.length > 0) path.pop();
      continue;
    }
    const key = f.keys ? f.keys[f.next]! : f.next;
    f.next++;
    const value = (f.node as Record<string | number, unknown>)[key];
    if (typeof value === 'string') {
      path.push(key);
      checkString(value);
      path.pop();
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    path.push(key);
    if (path.length >= limits.maxDepth) {
      const field = path.slice(0, 3).join('.') || 'body';
      throw new RequestError(400, field, `${field}: JSON nested deeper than ${limits.maxDepth} levels`, { limit: limits.maxDepth });
    }
    stack.push(frame(value));
  }
}

/** Only the nesting depth (every route: no string is special). */
export function assertJsonDepth(body: unknown, maxDepth = MAX_JSON_DEPTH): void {
  assertBodyShape(body, { maxDepth, maxStringChars: () => Number.POSITIVE_INFINITY });
}

/** Strings that are not images (prompts, names, comments, settings): as long as the longest prompt. */
export const MAX_STRING_CHARS = 16 * 1024;
/** Top-level A1111 fields that carry base64 images (ControlNet and other scripts put theirs in `alwayson_scripts`). */
const IMAGE_FIELDS = new Set(['init_images', 'mask', 'extra_images', 'alwayson_scripts']);

/** Limits for an A1111 render body: image fields up to the image limit in base64 (plus a data: prefix), others 16 KiB. */
export function a1111BodyLimits(maxImageBytes: number): BodyShapeLimits {
  const imageChars = Math.ceil(maxImageBytes / 3) * 4 + 256;
  return {
    maxDepth: MAX_JSON_DEPTH,
    maxStringChars: (path) => (IMAGE_FIELDS.has(String(path[0])) ? imageChars : MAX_STRING_CHARS),
    // An image over the size limit is too large a payload, as the decoder would say (413), not a bad value.
    tooLongStatus: (path) => (IMAGE_FIELDS.has(String(path[0])) ? 413 : 422),
  };
}
