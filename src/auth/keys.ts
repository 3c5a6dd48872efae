/**
 * Named API keys with roles: each client in its own room. A `client` key sees, cancels and replays only the
 * renders started with it (each render records the key's name as its owner, src/renders/owner.ts); an
 * `operator` key sees and acts on every render and may change the service's shared options. API_TOKEN is the
 * one-key case: a key named `default` with the operator role, as the single token always was. The GPU lease
 * keeps its own secret (GPU_LEASE_TOKEN), which is none of these.
 *
 * Configured as JSON, `[{"name": "webui", "token": "…", "role": "client"}, …]`, from API_KEYS or the file
 * named by API_KEYS_FILE (both may be used; names and tokens must be unique).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { timingSafeEqual } from 'node:crypto';

export type KeyRole = 'client' | 'operator';

export interface ApiKey {
  name: string;
  role: KeyRole;
  token: string;
}

/** Who made a request: the key's name and role (a key's token never leaves this module's callers). */
export interface Principal {
  name: string;
  role: KeyRole;
}

/** Names are written into search attributes and queries: a strict alphabet. */
const KEY_NAME = /^[A-Za-z0-9._-]{1,64}$/;

const keySchema = z.strictObject({
  name: z.string().regex(KEY_NAME, 'a key name is 1-64 letters, digits, . _ or -'),
  token: z.string().min(16, 'a token of at least 16 characters'),
  role: z.enum(['client', 'operator']).default('client'),
});
const keysSchema = z.array(keySchema);

export class KeysConfigError extends Error {
  override name = 'KeysConfigError';
}

/** The keys of a configuration: API_KEYS, API_KEYS_FILE and API_TOKEN (as `default`, an operator). */
export function loadApiKeys(cfg: { API_KEYS?: string | undefined; API_KEYS_FILE?: string | undefined; API_TOKEN?: string | undefined }): ApiKey[] {
  const keys: ApiKey[] = [];
  if (cfg.API_TOKEN) keys.push({ name: 'default', role: 'operator', token: cfg.API_TOKEN });
  if (cfg.API_KEYS) keys.push(...parseKeys(cfg.API_KEYS, 'API_KEYS'));
  if (cfg.API_KEYS_FILE) {
    let text: string;
    try {
      text = readFileSync(cfg.API_KEYS_FILE, 'utf8');
    } catch (err) {
      throw new KeysConfigError(`API_KEYS_FILE: cannot read ${cfg.API_KEYS_FILE}: ${(err as Error).message}`);
    }
    keys.push(...parseKeys(text, 'API_KEYS_FILE'));
  }
  const names = new Set<string>();
  const tokens = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) throw new KeysConfigError(`API keys: the name ${k.name} is used twice (API_TOKEN is the key named default)`);
    if (tokens.has(k.token)) throw new KeysConfigError(`API keys: key ${k.name} has the same token as another key`);
    names.add(k.name);
    tokens.add(k.token);
  }
  return keys;
}

function parseKeys(text: string, source: string): ApiKey[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new KeysConfigError(`${source}: not JSON (${(err as Error).message}); expected [{"name": …, "token": …, "role": "client"|"operator"}]`);
  }
  const parsed = keysSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new KeysConfigError(`${source}: ${issue.path.join('.') || '(list)'}: ${issue.message}`);
  }
  return parsed.data;
}

/** Constant-time comparison of a presented secret with the expected one. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The secret an Authorization header presents: `Bearer <token>`, or Basic with the token as password. */
export function presentedSecret(header: string | undefined): string | undefined {
  if (!header) return undefined;
  // Exactly `<scheme> <credentials>`: `Bearer tok junk` is not the token.
  const m = /^([A-Za-z]+) +(\S+)$/.exec(header.trim());
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  const value = m[2]!;
  if (scheme === 'bearer') return value;
  if (scheme !== 'basic') return undefined;
  // Strict base64 (Buffer.from skips what it cannot read, so `<creds>!!junk` would decode to the creds).
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  return decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : decoded;
}

/** The key an Authorization header presents, compared in constant time against every key (none: undefined). */
export function identify(header: string | undefined, keys: readonly ApiKey[]): Principal | undefined {
  const secret = presentedSecret(header);
  if (secret === undefined) return undefined;
  let found: ApiKey | undefined;
  // Every key is compared, whichever matches: the time taken does not say which key (or how many) exist.
  for (const k of keys) if (sameSecret(secret, k.token) && !found) found = k;
  return found ? { name: found.name, role: found.role } : undefined;
}
