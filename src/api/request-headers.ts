/** Header values as the routes read them: the first of repeated headers, trimmed, blank as absent. */
import type { IncomingHttpHeaders } from 'node:http';

export function headerValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s && s.trim() !== '' ? s.trim() : undefined;
}

/** The `Idempotency-Key` a client sent, if any. */
export function idempotencyKey(headers: IncomingHttpHeaders): string | undefined {
  return headerValue(headers['idempotency-key']);
}
