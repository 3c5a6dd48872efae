/**
 * ALLOWED_HOSTS takes IP addresses as well as names (a LAN client of the model-swapping proxy sends the proxy's
 * IP in Host, which the proxy forwards unchanged), in any spelling of the same host.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { normalizeHostName } from '../../src/config/loopback.ts';
import { startTestFront } from '../support/front.ts';

describe('normalizeHostName', () => {
  it('reads names, IPv4 and IPv6 in any spelling, with or without port and brackets', () => {
    expect(normalizeHostName('GPU-Box.lan.')).toBe('gpu-box.lan');
    expect(normalizeHostName('192.168.1.20')).toBe('192.168.1.20');
    expect(normalizeHostName('192.168.1.20:8080')).toBe('192.168.1.20');
    expect(normalizeHostName('fe80::0001')).toBe('fe80::1');
    expect(normalizeHostName('[FE80::1]:8080')).toBe('fe80::1');
  });

  it('refuses what is not a host', () => {
    for (const bad of ['', 'http://x', 'a b', 'x/y', 'user@host']) expect(normalizeHostName(bad), bad).toBeUndefined();
  });
});

describe('ALLOWED_HOSTS', () => {
  it('names a bad entry', () => {
    expect(() => loadConfig({ ALLOWED_HOSTS: 'box.lan,http://x/' })).toThrow(ConfigError);
    expect(() => loadConfig({ ALLOWED_HOSTS: 'box.lan,http://x/' })).toThrow(/ALLOWED_HOSTS/);
  });

  it('serves listed IPs and names on a loopback front, and nothing else', async () => {
    const front = await startTestFront({ ALLOWED_HOSTS: 'gpu-box.lan, 192.168.1.20, fe80::0001' });
    try {
      for (const host of ['192.168.1.20:8080', '192.168.1.20', '[fe80::1]:8080', 'GPU-BOX.lan:8080', '127.0.0.1:7860']) {
        const res = await front.app.inject({ method: 'GET', url: '/sdapi/v1/options', headers: { host } });
        expect(res.statusCode, host).toBe(200);
      }
      for (const host of ['192.168.1.21:8080', 'evil.example', '[fe80::2]']) {
        const res = await front.app.inject({ method: 'GET', url: '/sdapi/v1/options', headers: { host } });
        expect(res.statusCode, host).toBe(403);
      }
    } finally {
      await front.close();
    }
  });
});
