/**
 * One webhook try over HTTP: resolve the host, check every address it resolves to against the allow-list, then
 * connect to the checked address itself (pinned: no second lookup that DNS rebinding could answer differently),
 * POST the signed body, and read the status and at most a few KiB of the answer. Redirects are not followed (a
 * 3xx is an answer like any other non-2xx); the whole try has one deadline; no proxy, no connection reuse.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkAddress, checkTargetUrl, type AllowList } from './allow-list.ts';
import { parseIp, type IpAddress } from './addresses.ts';

/** The most of a receiver's answer that is read (and kept, as an excerpt, for operators). */
export const MAX_RESPONSE_BYTES = 4 * 1024;

export class WebhookRefusedError extends Error {
  override name = 'WebhookRefusedError';
}

export class WebhookUnreachableError extends Error {
  override name = 'WebhookUnreachableError';
}

export interface PostRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allow: AllowList;
  /** The resolver (tests); default the system's, as every other connection of this process. */
  resolve?: (host: string) => Promise<string[]>;
}

export interface PostAnswer {
  status: number;
  address: string;
  /** The first MAX_RESPONSE_BYTES of the answer's body, as text. */
  excerpt: string;
  durationMs: number;
}

const systemResolve = async (host: string): Promise<string[]> => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

export async function postWebhook(req: PostRequest): Promise<PostAnswer> {
  const t0 = Date.now();
  const verdict = checkTargetUrl(req.url, req.allow);
  if (!verdict.ok) throw new WebhookRefusedError(`${req.url}: ${verdict.reason}`);
  const url = verdict.url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const deadline = t0 + req.timeoutMs;
  const address = await withDeadline(pinnedAddress(host, req.allow, req.resolve ?? systemResolve), deadline, `resolving ${host}`);
  return send(url, host, address, req, deadline, t0);
}

/** The address to connect to: the literal one, or the first the host resolves to, once every one is checked. */
async function pinnedAddress(host: string, allow: AllowList, resolve: (host: string) => Promise<string[]>): Promise<IpAddress & { text: string }> {
  const literal = parseIp(host);
  let texts: string[];
  if (literal) texts = [host];
  else {
    try {
      texts = await resolve(host);
    } catch (err) {
      throw new WebhookUnreachableError(`cannot resolve ${host}: ${(err as Error).message}`);
    }
  }
  const addresses = texts.map((t) => ({ text: t, ip: parseIp(t) }));
  if (addresses.length === 0) throw new WebhookUnreachableError(`${host} resolves to no address`);
  // One refused address refuses the host: a name that mixes public and internal addresses is not trusted.
  for (const a of addresses) {
    if (!a.ip) throw new WebhookRefusedError(`${host} resolves to ${a.text}, which is not an IP address`);
    const refused = checkAddress(a.ip, allow);
    if (refused) throw new WebhookRefusedError(literal ? refused : `${host} resolves to ${refused}`);
  }
  const first = addresses[0]!;
  return { ...first.ip!, text: first.text };
}

function send(url: URL, host: string, address: IpAddress & { text: string }, req: PostRequest, deadline: number, t0: number): Promise<PostAnswer> {
  const family = address.family;
  // The connection goes to the checked address, whatever a second lookup would say now.
  const pinned: LookupFunction = (_name, opts, cb) => {
    if ((opts as { all?: boolean }).all)
      (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: address.text, family }]);
    else cb(null, address.text, family);
  };
  const body = Buffer.from(req.body, 'utf8');
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise<PostAnswer>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | undefined, answer?: PostAnswer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      if (err) reject(err);
      else resolve(answer!);
    };
    const request = lib.request({
      protocol: url.protocol,
      host,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent: false,
      lookup: pinned,
      ...(url.protocol === 'https:' && !parseIp(host) ? { servername: host } : {}),
      headers: {
        ...req.headers,
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': 'comfy-durable-webhooks',
      },
    });
    const timer = setTimeout(
      () => finish(new WebhookUnreachableError(`no answer from ${url.origin} (${address.text}) within ${req.timeoutMs} ms`)),
      Math.max(0, deadline - Date.now()),
    );
    request.on('error', (err) => finish(new WebhookUnreachableError(`${url.origin} (${address.text}): ${err.message}`)));
    request.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (): void =>
        finish(undefined, {
          status: res.statusCode ?? 0,
          address: address.text,
          excerpt: Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8'),
          durationMs: Date.now() - t0,
        });
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        // Enough to tell operators what the receiver said; the rest is never read.
        if (size >= MAX_RESPONSE_BYTES) done();
      });
      res.on('end', done);
      res.on('error', done);
    });
    request.end(body);
  });
}

async function withDeadline<T>(p: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new WebhookUnreachableError(`${what} took longer than the webhook timeout`)), Math.max(0, deadline - Date.now()));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
