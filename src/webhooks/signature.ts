/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com, the scheme OpenAI's webhooks use):
 *   webhook-id:        the message id, the same on every try of one message (receivers deduplicate on it)
 *   webhook-timestamp: seconds since the epoch of this try (receivers refuse old ones: replay protection)
 *   webhook-signature: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one per secret, space separated
 * The secret is `whsec_` + base64 of 24 to 64 random bytes; the HMAC key is the decoded bytes. With several
 * secrets (a rotation) every one signs, so a receiver that knows either verifies.
 */
import { createHmac } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;

/** The key bytes of a `whsec_…` secret; throws naming what is wrong. */
export function parseSecret(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX))
    throw new Error(`a webhook secret starts with ${SECRET_PREFIX} (then base64 of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes)`);
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) throw new Error('a webhook secret is whsec_ followed by standard base64');
  const key = Buffer.from(b64, 'base64');
  if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
    throw new Error(`a webhook secret holds ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes, this one ${key.length}`);
  }
  return key;
}

/** One `v1,<base64>` signature of a message. */
export function sign(key: Buffer, webhookId: string, timestampS: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${webhookId}.${timestampS}.${body}`).digest('base64')}`;
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The three headers of one try: signed with every key, the first one first. */
export function signedHeaders(keys: readonly Buffer[], webhookId: string, timestampS: number, body: string): SignedHeaders {
  if (keys.length === 0) throw new Error('no webhook secret to sign with');
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': keys.map((k) => sign(k, webhookId, timestampS, body)).join(' '),
  };
}
