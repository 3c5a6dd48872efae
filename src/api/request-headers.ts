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

/**
 * `X-Webhook-URL`: where a synchronous image route (A1111, OpenAI images) also posts its signed `image.completed`
 * / `image.failed` event, for a client that may go away before the answer (the render goes on by default).
 */
export function webhookUrlHeader(headers: IncomingHttpHeaders): string | undefined {
  return headerValue(headers['x-webhook-url']);
}

/** The headers a render-starting route reads, for the spec (the routes read and check them themselves). */
export const renderHeadersSchema = z.looseObject({
  'idempotency-key': z.string().optional().describe('A retry with the same key and body attaches to the same render instead of starting another'),
  'x-priority': z.string().optional().describe('1 (most urgent) .. 5; default 3. The body field `priority` does the same'),
  'x-webhook-url': z
    .string()
    .optional()
    .describe('Also POST a signed Standard Webhooks event here when the render ends (image routes; videos take the body field webhook_url)'),
});
