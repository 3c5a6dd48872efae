/**
 * Deterministic prompt ids. ComfyUI v0.25.0+ requires `prompt_id` to be a canonical lowercase hyphenated
 * UUID (`validate_job_id`: the value must round-trip through Python's `uuid.UUID` unchanged), and a retried
 * activity must compute the same id to find the prompt it already submitted.
 */
import { createHash } from 'node:crypto';

/** Domain separation: ids from this function never collide with ids other code derives from the same parts. */
const NAMESPACE = 'comfy-durable/prompt-id/v1';

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * UUIDv8 (RFC 9562 "custom") from sha256 of the parts. The parts are JSON-encoded so that `["a-b", 1]` and
 * `["a", "b-1"]`, or `1` and `"1"`, cannot produce the same id.
 */
export function derivePromptId(parts: readonly (string | number)[]): string {
  if (parts.length === 0) throw new TypeError('derivePromptId needs at least one part');
  for (const p of parts) {
    if (typeof p === 'number' && !Number.isFinite(p)) throw new TypeError(`derivePromptId: non-finite number ${p}`);
    if (typeof p !== 'number' && typeof p !== 'string') throw new TypeError('derivePromptId: parts must be strings or numbers');
  }
  const digest = createHash('sha256').update(NAMESPACE).update('\n').update(JSON.stringify(parts)).digest();
  const b = Buffer.from(digest.subarray(0, 16));
  b[6] = (b[6]! & 0x0f) | 0x80; // version 8
  b[8] = (b[8]! & 0x3f) | 0x80; // RFC 4122/9562 variant 10xx
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** True for the form `str(uuid.UUID(x)) == x` accepts: 8-4-4-4-12 lowercase hex. */
export function isCanonicalUuid(s: string): boolean {
  return CANONICAL_UUID.test(s);
}
