/**
 * IP addresses as bytes, and which of them a webhook may reach without being listed: only global unicast
 * addresses. Loopback, private, link-local (the cloud metadata service at 169.254.169.254 and fd00:ec2::254),
 * carrier-grade NAT, multicast, documentation, benchmarking and reserved ranges are internal, as are the IPv6
 * forms that carry an internal IPv4 address (IPv4-mapped `::ffff:127.0.0.1`, NAT64 `64:ff9b::7f00:1`, 6to4
 * `2002:7f00:1::`). The ranges are IANA's special-purpose registries (RFC 6890 and its updates).
 *
 * Input is an address as a URL parser or a resolver gives it: the WHATWG URL parser has already turned
 * `2130706433`, `0x7f.1` and `0177.0.0.1` into `127.0.0.1`; this module reads only the canonical forms.
 */
import { isIP } from 'node:net';

export interface IpAddress {
  family: 4 | 6;
  /** 4 bytes for IPv4, 16 for IPv6. */
  bytes: Uint8Array;
}

export interface IpRange {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
}

/** A dotted-quad IPv4 or an IPv6 address (brackets allowed), else undefined. */
export function parseIp(text: string): IpAddress | undefined {
  const t = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const family = isIP(t);
  if (family === 4) return { family: 4, bytes: Uint8Array.from(t.split('.').map(Number)) };
  if (family === 6) return { family: 6, bytes: ipv6Bytes(t) };
  return undefined;
}

/** `10.0.0.0/8`, `fd00::/8`, or a single address (its full length). */
export function parseRange(text: string): IpRange | undefined {
  const slash = text.lastIndexOf('/');
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return undefined;
  const max = ip.family === 4 ? 32 : 128;
  if (slash < 0) return { ...ip, prefix: max };
  const p = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(p) || Number(p) > max) return undefined;
  return { ...ip, prefix: Number(p) };
}

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for; any other address unchanged. */
export function unmapped(ip: IpAddress): IpAddress {
  if (ip.family === 6 && startsWith(ip.bytes, MAPPED_PREFIX)) return { family: 4, bytes: ip.bytes.slice(12) };
  return ip;
}

export function inRange(ip: IpAddress, range: IpRange): boolean {
  const a = unmapped(ip);
  const r = range.family === 6 && range.prefix >= 96 && startsWith(range.bytes, MAPPED_PREFIX) ? mappedRangeAsV4(range) : range;
  if (a.family !== r.family) return false;
  for (let bit = 0; bit < r.prefix; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((a.bytes[byte]! & mask) !== (r.bytes[byte]! & mask)) return false;
  }
  return true;
}

/** Why an address is internal (`loopback`, `private`, `link-local`, …), or undefined for a global unicast address. */
export function internalKind(ip: IpAddress): string | undefined {
  const a = unmapped(ip);
  if (a.family === 4) return ipv4Kind(a);
  const b = a.bytes;
  // NAT64 (RFC 6052) and 6to4 (RFC 3056) carry an IPv4 address: internal when that one is.
  if (startsWith(b, NAT64_PREFIX)) return embedded(b.slice(12), 'NAT64');
  if (b[0] === 0x20 && b[1] === 0x02) return embedded(b.slice(2, 6), '6to4');
  for (const [range, kind] of IPV6_INTERNAL) if (inRange(a, range)) return kind;
  // Global unicast is 2000::/3; everything else is reserved or special.
  return (b[0]! & 0xe0) === 0x20 ? undefined : 'reserved';
}

export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return Array.from(ip.bytes).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i]! << 8) | ip.bytes[i + 1]!).toString(16));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}

const MAPPED_PREFIX = Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
const NAT64_PREFIX = Uint8Array.from([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0]);

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  return prefix.every((v, i) => bytes[i] === v);
}

function mappedRangeAsV4(range: IpRange): IpRange {
  return { family: 4, bytes: range.bytes.slice(12), prefix: range.prefix - 96 };
}

function embedded(v4: Uint8Array, via: string): string | undefined {
  const kind = ipv4Kind({ family: 4, bytes: v4 });
  return kind ? `${kind} (through ${via})` : undefined;
}

const r = (text: string): IpRange => parseRange(text)!;

const IPV4_INTERNAL: Array<[IpRange, string]> = [
  // 0.0.0.0 reaches the local host on Linux.
  [r('0.0.0.0/8'), 'this-network'],
  [r('10.0.0.0/8'), 'private'],
  [r('100.64.0.0/10'), 'shared (carrier-grade NAT)'],
  [r('127.0.0.0/8'), 'loopback'],
  [r('169.254.0.0/16'), 'link-local (cloud metadata)'],
  [r('172.16.0.0/12'), 'private'],
  [r('192.0.0.0/24'), 'IETF protocol assignments'],
  [r('192.0.2.0/24'), 'documentation'],
  [r('192.88.99.0/24'), '6to4 relay'],
  [r('192.168.0.0/16'), 'private'],
  [r('198.18.0.0/15'), 'benchmarking'],
  [r('198.51.100.0/24'), 'documentation'],
  [r('203.0.113.0/24'), 'documentation'],
  [r('224.0.0.0/4'), 'multicast'],
  [r('240.0.0.0/4'), 'reserved'],
];

const IPV6_INTERNAL: Array<[IpRange, string]> = [
  [r('::/128'), 'unspecified'],
  [r('::1/128'), 'loopback'],
  [r('64:ff9b:1::/48'), 'local-use NAT64'],
  [r('100::/64'), 'discard-only'],
  [r('2001:db8::/32'), 'documentation'],
  [r('2001::/23'), 'IETF protocol assignments'],
  [r('3fff::/20'), 'documentation'],
  [r('fc00::/7'), 'unique-local (private)'],
  [r('fe80::/10'), 'link-local'],
  [r('fec0::/10'), 'site-local'],
  [r('ff00::/8'), 'multicast'],
];

function ipv4Kind(ip: IpAddress): string | undefined {
  for (const [range, kind] of IPV4_INTERNAL) if (inRange(ip, range)) return kind;
  return undefined;
}

/** An IPv6 text (already checked by isIP) as 16 bytes: `::` expanded, a dotted IPv4 tail read as two groups. */
function ipv6Bytes(text: string): Uint8Array {
  // A zone (`fe80::1%eth0`) names an interface, not part of the address.
  const zone = text.indexOf('%');
  let t = zone < 0 ? text : text.slice(0, zone);
  const lastColon = t.lastIndexOf(':');
  const tailPart = t.slice(lastColon + 1);
  if (tailPart.includes('.')) {
    const [a, b, c, d] = tailPart.split('.').map(Number) as [number, number, number, number];
    t = `${t.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = t.includes('::') ? t.split('::') : [t, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  const groups = [...headGroups, ...zeros, ...tailGroups];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}
