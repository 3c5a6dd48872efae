/**
 * Which URLs a webhook may be delivered to (WEBHOOK_ALLOWED_TARGETS), so the service is no open relay: a
 * client can only name receivers the operator listed, and never an internal address the operator did not list.
 *
 * Entries, comma separated:
 *   hooks.example.com   that host name exactly
 *   *.example.com       any name under example.com (not example.com itself)
 *   *                   any host name or address, as long as it resolves to global (public) addresses only
 *   203.0.113.7, 10.0.0.0/8, fd00::/8, 127.0.0.1
 *                       addresses and ranges: a URL may name them, and a name may resolve into them
 *
 * Two checks. `checkTargetUrl` reads the URL alone (at submission, and again before each delivery: a target
 * taken off the list is no longer posted to): scheme http(s), no credentials, a listed host. `checkAddress` runs
 * on every address the host resolves to at delivery time, right before connecting to it (DNS rebinding: a name
 * that resolved to a public address when the render was submitted may point at 169.254.169.254 by the time it
 * ends): an internal address (addresses.ts) is refused unless a listed range holds it.
 */
import { formatIp, inRange, internalKind, parseIp, parseRange, type IpAddress, type IpRange } from './addresses.ts';

export interface AllowList {
  /** `*`: any host whose addresses are all global. */
  any: boolean;
  hosts: string[];
  /** From `*.example.com`: `.example.com`. */
  suffixes: string[];
  ranges: IpRange[];
  /** The entries as written, for messages. */
  entries: string[];
}

export const EMPTY_ALLOW_LIST: AllowList = { any: false, hosts: [], suffixes: [], ranges: [], entries: [] };

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** Parses the setting's entries; throws an Error naming every entry it cannot read. */
export function parseAllowList(entries: readonly string[]): AllowList {
  const list: AllowList = { any: false, hosts: [], suffixes: [], ranges: [], entries: [] };
  const bad: string[] = [];
  for (const raw of entries) {
    const e = raw.trim().toLowerCase().replace(/\.$/, '');
    if (e === '') continue;
    list.entries.push(e);
    if (e === '*') {
      list.any = true;
      continue;
    }
    const range = parseRange(e);
    if (range) {
      // 0.0.0.0/0 or ::/0 would make every internal address a target: list the ranges meant instead.
      if (range.prefix === 0) bad.push(`${raw} (a /0 range lists every internal address; name the ranges meant)`);
      else list.ranges.push(range);
      continue;
    }
    if (e.startsWith('*.') && HOST_NAME.test(e.slice(2))) list.suffixes.push(e.slice(1));
    else if (HOST_NAME.test(e) && !/^[\d.]+$/.test(e)) list.hosts.push(e);
    else bad.push(raw);
  }
  if (bad.length > 0) throw new Error(`not a host name, *.domain, IP address or CIDR range: ${bad.join(', ')}`);
  return list;
}

export type Verdict = { ok: true; url: URL } | { ok: false; reason: string };

/** The URL alone: http(s), no credentials, a host the list names (or `*`), a literal address only if allowed. */
export function checkTargetUrl(text: string, list: AllowList): Verdict {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'not an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `scheme ${url.protocol.slice(0, -1)} is not http or https` };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'credentials in the URL are not sent; use a signed webhook instead' };
  // The URL parser has normalised the host: `2130706433`, `0x7f.1` and `[::ffff:7f00:1]` are addresses here.
  const host = url.hostname.replace(/\.$/, '');
  const ip = parseIp(host);
  if (ip) {
    const refused = checkAddress(ip, list);
    if (refused) return { ok: false, reason: refused };
    if (!list.any && !list.ranges.some((r) => inRange(ip, r))) return { ok: false, reason: `${host} is not in WEBHOOK_ALLOWED_TARGETS` };
    return { ok: true, url };
  }
  if (list.any || list.hosts.includes(host) || list.suffixes.some((s) => host.endsWith(s))) return { ok: true, url };
  return { ok: false, reason: `host ${host} is not in WEBHOOK_ALLOWED_TARGETS` };
}

/** Undefined when a webhook may connect to this address; else why not. */
export function checkAddress(ip: IpAddress, list: AllowList): string | undefined {
  if (list.ranges.some((r) => inRange(ip, r))) return undefined;
  const kind = internalKind(ip);
  if (!kind) return undefined;
  return `${formatIp(ip)} is a ${kind} address, which WEBHOOK_ALLOWED_TARGETS does not list`;
}
