import { describe, expect, it } from 'vitest';
import { authorized, isCrossOrigin } from '../../src/api/server.ts';

const basic = (s: string): string => `Basic ${Buffer.from(s).toString('base64')}`;

describe('API token', () => {
  it('accepts Bearer and Basic carrying the token (Open WebUI and SillyTavern only send Basic)', () => {
    expect(authorized('Bearer s3cret', 's3cret')).toBe(true);
    expect(authorized('bearer s3cret', 's3cret')).toBe(true);
    expect(authorized(basic('user:s3cret'), 's3cret')).toBe(true);
    expect(authorized(basic('s3cret'), 's3cret')).toBe(true);
  });

  it('refuses anything else', () => {
    expect(authorized(undefined, 's3cret')).toBe(false);
    expect(authorized('Bearer s3cre', 's3cret')).toBe(false);
    expect(authorized('Bearer s3cretX', 's3cret')).toBe(false);
    expect(authorized(basic('s3cret:user'), 's3cret')).toBe(false);
    expect(authorized('Basic ', 's3cret')).toBe(false);
    expect(authorized('Token s3cret', 's3cret')).toBe(false);
  });
});

describe('cross-origin guard', () => {
  it('lets server-side clients (no Origin) and same-origin pages through', () => {
    expect(isCrossOrigin(undefined, '127.0.0.1:7860')).toBe(false);
    expect(isCrossOrigin('http://127.0.0.1:7860', '127.0.0.1:7860')).toBe(false);
  });

  it('refuses other origins, opaque origins and garbage', () => {
    expect(isCrossOrigin('https://evil.example', '127.0.0.1:7860')).toBe(true);
    expect(isCrossOrigin('http://127.0.0.1:7861', '127.0.0.1:7860')).toBe(true);
    expect(isCrossOrigin('null', '127.0.0.1:7860')).toBe(true);
    expect(isCrossOrigin('::::', '127.0.0.1:7860')).toBe(true);
  });
});

describe('DNS-rebinding guard (loopback-bound front)', () => {
  it('knows loopback host names', async () => {
    const { hostnameOf, isLoopbackHost } = await import('../../src/api/server.ts');
    for (const h of ['127.0.0.1:7860', 'localhost:7860', '[::1]:7860', '127.1.2.3', 'app.localhost:80']) {
      expect(isLoopbackHost(hostnameOf(h)), h).toBe(true);
    }
    for (const h of ['evil.example:7860', '192.168.1.5:7860', '', '127.0.0.1.evil.example', '0.0.0.0:7860']) {
      expect(isLoopbackHost(hostnameOf(h)), h).toBe(false);
    }
  });
});
