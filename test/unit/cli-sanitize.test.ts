import { describe, expect, it } from 'vitest';
import { sanitizeForTerminal } from '../../src/cli/sanitize.ts';
import { startMetricsServer } from '../../src/metrics/server.ts';
import { createLogger } from '../../src/log.ts';
import { loadConfig } from '../../src/config/config.ts';

describe('terminal output (red-team: raw escapes from prompts)', () => {
  it('C0 (but newline and tab), DEL and C1 controls, the 8-bit CSI U+009B included, become inert escapes', () => {
    const hostile = 'a\u001b[31mred\u001b]0;title\u0007\u001b[2K\r\u009b31m\u007f\u0085z\tok\n';
    const s = sanitizeForTerminal(hostile);
    // eslint-disable-next-line no-control-regex -- the expected output is checked for control characters
    expect(s).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(s).toBe('a\\u001b[31mred\\u001b]0;title\\u0007\\u001b[2K\\u000d\\u009b31m\\u007f\\u0085z\tok\n');
    // Still valid JSON when it was JSON (the --json output keeps parsing).
    expect(JSON.parse(sanitizeForTerminal(JSON.stringify({ p: 'x\u009by' })))).toEqual({ p: 'x\u009by' });
    expect(sanitizeForTerminal('Zoë 日本 🙂')).toBe('Zoë 日本 🙂');
  });

  it('bidi controls and invisible characters cannot reorder or hide what the operator reads', () => {
    // A prompt that would display as "cat" + reversed text, and an isolate that hides its span's true order.
    const hostile = 'a cat\u202egnp.exe\u202c b\u2066x\u2069 c\u200f\u200e\u061c\u202a\u202b\u202d\u2067\u2068\u200b\ufeff\u2028';
    const s = sanitizeForTerminal(hostile);
    expect(s).not.toMatch(/[\u061c\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]/u);
    expect(s).toBe('a cat\\u202egnp.exe\\u202c b\\u2066x\\u2069 c\\u200f\\u200e\\u061c\\u202a\\u202b\\u202d\\u2067\\u2068\\u200b\\ufeff\\u2028');
    expect(JSON.parse(sanitizeForTerminal(JSON.stringify({ p: 'x\u202ey' })))).toEqual({ p: 'x\u202ey' });
    // Right-to-left scripts themselves are text, not controls.
    expect(sanitizeForTerminal('שלום مرحبا')).toBe('שלום مرحبا');
  });
});

describe('worker /metrics (red-team: open under API_TOKEN, 0.0.0.0 in compose)', () => {
  it('binds to loopback by default and asks for the token', async () => {
    expect(loadConfig({}).METRICS_HOST).toBe('127.0.0.1');
    const server = await startMetricsServer({ host: '127.0.0.1', port: 0, token: 's3cret', logger: createLogger('silent') });
    try {
      expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const ok = await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer s3cret' } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toMatch(/comfy_durable_/);
    } finally {
      await server.close();
    }
  });
});
