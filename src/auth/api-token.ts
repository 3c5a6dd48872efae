/**
 * API_TOKEN checks, shared by the front and the worker's metrics server (which must not import the front).
 */
import { timingSafeEqual } from 'node:crypto';

/** Constant-time comparison of a presented secret with the expected one. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * `Bearer <token>`, or `Basic` whose password (or whole credential) is the token: Open WebUI and SillyTavern
 * can only send Basic auth, and A1111's own `--api-auth` is Basic.
 */
export function authorized(header: string | undefined, token: string): boolean {
  if (!header) return false;
  // Exactly `<scheme> <credentials>`: `Bearer tok junk` is not the token.
  const m = /^([A-Za-z]+) +(\S+)$/.exec(header.trim());
  if (!m) return false;
  const scheme = m[1]!.toLowerCase();
  const value = m[2]!;
  if (scheme === 'bearer') return sameSecret(value, token);
  if (scheme === 'basic') {
    // Strict base64 (Buffer.from skips what it cannot read, so `<creds>!!junk` would decode to the creds).
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) return false;
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const password = decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : decoded;
    return sameSecret(password, token);
  }
  return false;
}
