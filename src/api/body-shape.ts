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

/** Throws a RequestError naming the first field that is nested too deep (400) or holds too long a string. */
export function assertBodyShape(body: unknown, limits: BodyShapeLimits): void {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: body, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      const max = limits.maxStringChars(path);
      if (value.length > max) {
        const field = path.join('.') || 'body';
        throw new RequestError(limits.tooLongStatus?.(path) ?? 422, field, `${field}: must be at most ${max} characters (got ${value.length})`, { limit: max });
      }
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (path.length >= limits.maxDepth) {
      const field = path.slice(0, 3).join('.') || 'body';
      throw new RequestError(400, field, `${field}: JSON nested deeper than ${limits.maxDepth} levels`, { limit: limits.maxDepth });
    }
    if (Array.isArray(value)) value.forEach((v, i) => stack.push({ value: v, path: [...path, i] }));
    else for (const [k, v] of Object.entries(value)) stack.push({ value: v, path: [...path, k] });
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
