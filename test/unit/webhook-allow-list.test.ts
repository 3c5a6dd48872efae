/**
 * The webhook allow-list (src/webhooks/allow-list.ts, addresses.ts): no open relay, and no internal address
 * unless listed, however the address is spelled (decimal, hex and octal IPv4, IPv6, IPv4-mapped IPv6, NAT64,
 * 6to4, zones), both on the URL and on every address a name resolves to.
 */
import { describe, expect, it } from 'vitest';
import { internalKind, parseIp, parseRange, inRange } from '../../src/webhooks/addresses.ts';
import { checkAddress, checkTargetUrl, parseAllowList, EMPTY_ALLOW_LIST } from '../../src/webhooks/allow-list.ts';

const list = (...entries: string[]) => parseAllowList(entries);
const reasonOf = (url: string, l = list('*')): string | undefined => {
  const v = checkTargetUrl(url, l);
  return v.ok ? undefined : v.reason;
};

describe('internal addresses', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['0.0.0.0', 'this-network'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared (carrier-grade NAT)'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fd00:ec2::254', 'unique-local (private)'],
    ['fc00::1', 'unique-local (private)'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local (cloud metadata)'],
    ['64:ff9b::a9fe:a9fe', 'link-local (cloud metadata) (through NAT64)'],
    ['2002:7f00:1::1', 'loopback (through 6to4)'],
    ['::127.0.0.1', 'reserved'],
    ['fe80::1%eth0', 'link-local'],
  ])('%s is %s', (text, kind) => {
    const ip = parseIp(text);
    expect(ip, text).toBeDefined();
    expect(internalKind(ip!)).toBe(kind);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    '%s is public',
    (text) => expect(internalKind(parseIp(text)!)).toBeUndefined(),
  );

  it('ranges match IPv4-mapped IPv6 addresses as the IPv4 they carry', () => {
    expect(inRange(parseIp('::ffff:10.1.2.3')!, parseRange('10.0.0.0/8')!)).toBe(true);
    expect(inRange(parseIp('10.1.2.3')!, parseRange('::ffff:10.0.0.0/104')!)).toBe(true);
    expect(inRange(parseIp('11.0.0.1')!, parseRange('10.0.0.0/8')!)).toBe(false);
    expect(inRange(parseIp('fd12::1')!, parseRange('fd00::/8')!)).toBe(true);
    expect(inRange(parseIp('fe80::1')!, parseRange('fd00::/8')!)).toBe(false);
  });
});

describe('target URLs', () => {
  it('nothing listed: no URL is allowed (no open relay)', () => {
    expect(checkTargetUrl('https://hooks.example.com/x', EMPTY_ALLOW_LIST)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not in WEBHOOK_ALLOWED_TARGETS/),
    });
  });

  it('host names: exact, *.domain (not the apex), or * for any', () => {
    const l = list('hooks.example.com', '*.svc.example.org');
    expect(checkTargetUrl('https://hooks.example.com/in', l).ok).toBe(true);
    expect(checkTargetUrl('https://HOOKS.example.com./in', l).ok).toBe(true);
    expect(checkTargetUrl('https://a.b.svc.example.org/in', l).ok).toBe(true);
    expect(checkTargetUrl('https://svc.example.org/in', l).ok).toBe(false);
    expect(checkTargetUrl('https://evil-hooks.example.com/in', l).ok).toBe(false);
    expect(checkTargetUrl('https://hooks.example.com.evil.net/in', l).ok).toBe(false);
    expect(checkTargetUrl('https://anything.net/in', list('*')).ok).toBe(true);
  });

  it.each([
    ['http://127.0.0.1:9000/hook', 'loopback'],
    ['http://2130706433/hook', 'loopback'],
    ['http://0x7f000001/hook', 'loopback'],
    ['http://0x7f.1/hook', 'loopback'],
    ['http://0177.0.0.1/hook', 'loopback'],
    ['http://127.1/hook', 'loopback'],
    ['http://0/hook', 'this-network'],
    ['http://[::1]/hook', 'loopback'],
    ['http://[::ffff:127.0.0.1]/hook', 'loopback'],
    ['http://[::ffff:7f00:1]/hook', 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local'],
    ['http://2852039166/latest/meta-data/', 'link-local'],
    ['http://0xa9.0xfe.0xa9.0xfe/', 'link-local'],
    ['http://[::ffff:a9fe:a9fe]/', 'link-local'],
    ['http://[fd00:ec2::254]/', 'unique-local'],
    ['http://10.0.0.5/', 'private'],
    ['http://[fe80::1]/', 'link-local'],
  ])('%s is refused even with * (%s)', (url, kind) => {
    expect(reasonOf(url)).toContain(kind);
  });

  it('an internal address is allowed when an address or range lists it, in any spelling', () => {
    const l = list('127.0.0.1', '10.0.0.0/8');
    expect(checkTargetUrl('http://127.0.0.1:9000/hook', l).ok).toBe(true);
    expect(checkTargetUrl('http://2130706433:9000/hook', l).ok).toBe(true);
    expect(checkTargetUrl('http://[::ffff:127.0.0.1]:9000/hook', l).ok).toBe(true);
    expect(checkTargetUrl('http://10.9.8.7/hook', l).ok).toBe(true);
    expect(checkTargetUrl('http://127.0.0.2/hook', l).ok).toBe(false);
    expect(checkTargetUrl('http://[::1]/hook', l).ok).toBe(false);
    expect(checkTargetUrl('http://169.254.169.254/', l).ok).toBe(false);
  });

  it('a public address must be listed too, unless *', () => {
    expect(checkTargetUrl('https://8.8.8.8/x', list('hooks.example.com')).ok).toBe(false);
    expect(checkTargetUrl('https://8.8.8.8/x', list('8.8.8.0/24')).ok).toBe(true);
    expect(checkTargetUrl('https://8.8.8.8/x', list('*')).ok).toBe(true);
  });

  it.each([
    ['ftp://hooks.example.com/x', /scheme ftp/],
    ['file:///etc/passwd', /scheme file/],
    ['https://user:pw@hooks.example.com/x', /credentials/],
    ['hooks.example.com/x', /not an absolute URL/],
    ['', /not an absolute URL/],
  ])('%s is refused', (url, why) => expect(reasonOf(url)).toMatch(why));
});

describe('resolved addresses (checked at delivery time, DNS rebinding)', () => {
  it('a listed name that resolves to an internal address is refused unless that address is listed', () => {
    const l = list('hooks.example.com');
    expect(checkAddress(parseIp('93.184.216.34')!, l)).toBeUndefined();
    expect(checkAddress(parseIp('169.254.169.254')!, l)).toMatch(/169\.254\.169\.254 is a link-local/);
    expect(checkAddress(parseIp('::ffff:10.0.0.1')!, l)).toMatch(/private/);
    expect(checkAddress(parseIp('10.0.0.1')!, list('hooks.example.com', '10.0.0.0/24'))).toBeUndefined();
  });
});

describe('the setting', () => {
  it('reads names, wildcards, addresses, ranges and *', () => {
    const l = parseAllowList(['hooks.example.com', ' *.example.org ', '127.0.0.1', '[::1]', 'fd00::/8', '*', '']);
    expect(l).toMatchObject({ any: true, hosts: ['hooks.example.com'], suffixes: ['.example.org'] });
    expect(l.ranges.map((r) => r.prefix)).toEqual([32, 128, 8]);
  });

  it('refuses what it cannot read, and /0 ranges', () => {
    expect(() => parseAllowList(['http://x.example.com'])).toThrow(/http:\/\/x\.example\.com/);
    expect(() => parseAllowList(['0.0.0.0/0'])).toThrow(/\/0 range/);
    expect(() => parseAllowList(['::/0'])).toThrow(/\/0 range/);
    expect(() => parseAllowList(['10.0.0.0/33'])).toThrow(/10\.0\.0\.0\/33/);
    expect(() => parseAllowList(['*example.com'])).toThrow(/\*example\.com/);
    expect(() => parseAllowList(['host:8080'])).toThrow(/host:8080/);
  });
});
