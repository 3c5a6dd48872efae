/** Header values as the routes read them: the first of repeated headers, trimmed, blank as absent. */
import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';

export function headerValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s && s.trim() !== '' ? s.trim() : undefined;
}

/** The `Idempotency-Key` a client sent, if any. */
export function idempotencyKey(headers: IncomingHttpHeaders): string | undefined {
  return headerValue(headers['idempotency-key']);
}

/** The headers a render-starting route reads, for the spec (the routes read and check them themselves). */
export const renderHeadersSchema = z.looseObject({
  'idempotency-key': z.string().optional().describe('A retry with the same key and body attaches to the same render instead of starting another'),
  'x-priority': z.string().optional().describe('1 (most urgent) .. 5; default 3. The body field `priority` does the same'),
});
