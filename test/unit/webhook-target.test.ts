/**
 * The submission service's webhook seam (src/renders/webhook-target.ts, renders/submit.ts): a protocol says
 * where the client put the URL and whether the work is async; the submitter checks the URL against the
 * allow-list (a 400 naming that field, nothing built or started), applies WEBHOOK_URL to async work only, and
 * records the target in the render's input. The webhook settings' own checks (src/config/config.ts) too.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BuiltRender } from '../../src/contracts/activities.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import type { RenderRequest } from '../../src/contracts/render.ts';
import type { RenderService, StartOptions, StartedRender } from '../../src/renders/render-service.ts';
import { RenderSubmitter } from '../../src/renders/submit.ts';
import { resolveWebhookTarget, type WebhookOption } from '../../src/renders/webhook-target.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const config = (env: Record<string, string> = {}) =>
  loadConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_ALLOWED_TARGETS: 'hooks.example.com,127.0.0.1', PUBLIC_URL: 'https://box.example.com/', ...env });
const video = (over: Partial<WebhookOption> = {}): WebhookOption => ({
  field: 'webhook_url',
  async: true,
  event: 'video',
  resultPath: (id) => `/v1/videos/${id}/content`,
  ...over,
});

describe('resolveWebhookTarget', () => {
  it('a per-request URL that the list allows becomes the target, with links under PUBLIC_URL and the limits', () => {
    const t = resolveWebhookTarget(video({ url: ' https://hooks.example.com/in ', data: (id) => ({ prompt_id: `p-${id}` }) }), config(), 'render-1');
    expect(t).toEqual({
      url: 'https://hooks.example.com/in',
      family: 'video',
      baseUrl: 'https://box.example.com',
      resultPath: '/v1/videos/render-1/content',
      data: { prompt_id: 'p-render-1' },
      limits: { maxAttempts: 12, backoffInitialMs: 5_000, backoffMaxMs: 3_600_000, timeoutMs: 10_000 },
    });
  });

  it('WEBHOOK_URL applies to async work without a URL of its own, never to synchronous work', () => {
    const c = config({ WEBHOOK_URL: 'https://default.example.net/hook' });
    expect(resolveWebhookTarget(video(), c, 'r')?.url).toBe('https://default.example.net/hook');
    expect(resolveWebhookTarget(video({ url: '' }), c, 'r')?.url).toBe('https://default.example.net/hook');
    expect(resolveWebhookTarget(video({ async: false }), c, 'r')).toBeUndefined();
    expect(resolveWebhookTarget(video({ url: 'https://hooks.example.com/mine' }), c, 'r')?.url).toBe('https://hooks.example.com/mine');
    expect(resolveWebhookTarget(undefined, c, 'r')).toBeUndefined();
    expect(resolveWebhookTarget(video(), config(), 'r')).toBeUndefined();
  });

  it.each([
    ['http://169.254.169.254/latest/meta-data/', /link-local/],
    ['http://[::ffff:10.0.0.1]/x', /private/],
    ['https://elsewhere.example.org/x', /not in WEBHOOK_ALLOWED_TARGETS/],
    ['gopher://hooks.example.com/x', /scheme gopher/],
    [`https://hooks.example.com/${'a'.repeat(2100)}`, /at most 2048 characters/],
  ])('%s is a 400 naming the client field', (url, why) => {
    expect(() => resolveWebhookTarget(video({ url, field: 'extra_data.webhook' }), config(), 'r')).toThrow(
      expect.objectContaining({ status: 400, field: 'extra_data.webhook', message: expect.stringMatching(why) }),
    );
  });

  it('without a secret no per-request webhook is taken', () => {
    expect(() => resolveWebhookTarget(video({ url: 'https://hooks.example.com/in' }), loadConfig({}), 'r')).toThrow(/not enabled on this server/);
  });
});

describe('the submitter', () => {
  function submitterWith() {
    const log: string[] = [];
    const renders = {
      start: async (_r: RenderRequest, o: StartOptions): Promise<StartedRender> => {
        log.push(`start:${JSON.stringify(o.built.webhook ?? null)}`);
        return { renderId: o.renderId, handle: {} as StartedRender['handle'], attached: false };
      },
    } as unknown as RenderService;
    const submitter = new RenderSubmitter({
      renders,
      webhooks: config(),
      build: () => {
        log.push('build');
        return { plan: { items: [], uploads: [], outputNode: '9' }, limits: {} } as unknown as BuiltRender;
      },
    });
    return { submitter, log };
  }
  const request = { model: 'videogen-wan22-5b', prompt: 'p' } as RenderRequest;

  it('records the target in the render input', async () => {
    const { submitter, log } = submitterWith();
    await submitter.submit({ route: 'v1.videos', request, webhook: video({ url: 'http://127.0.0.1:9/x' }) });
    expect(log[0]).toBe('build');
    expect(JSON.parse(log[1]!.slice('start:'.length))).toMatchObject({ url: 'http://127.0.0.1:9/x', family: 'video' });
  });

  it('a refused URL: nothing built or started', async () => {
    const { submitter, log } = submitterWith();
    await expect(submitter.submit({ route: 'v1.videos', request, webhook: video({ url: 'http://127.0.0.2/x' }) })).rejects.toMatchObject({
      status: 400,
      field: 'webhook_url',
    });
    expect(log).toEqual([]);
  });
});

describe('webhook settings', () => {
  it('a target or a list needs a secret', () => {
    expect(() => loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/x' })).toThrow(ConfigError);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_TARGETS: '*' })).toThrow(/WEBHOOK_SECRET: required/);
  });

  it('a malformed secret or list names the variable', () => {
    expect(() => loadConfig({ WEBHOOK_SECRET: 'secret' })).toThrow(/WEBHOOK_SECRET: a webhook secret starts with whsec_/);
    expect(() => loadConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_ALLOWED_TARGETS: 'http://x/' })).toThrow(/WEBHOOK_ALLOWED_TARGETS: not a host name/);
  });

  it('a default on an internal address must be listed; its host is allowed without listing', () => {
    expect(() => loadConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_URL: 'http://127.0.0.1:9000/hook' })).toThrow(/WEBHOOK_URL: 127\.0\.0\.1 is a loopback address/);
    expect(() => loadConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_URL: 'http://169.254.169.254/' })).toThrow(/link-local/);
    const c = loadConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_URL: 'http://127.0.0.1:9000/hook', WEBHOOK_ALLOWED_TARGETS: '127.0.0.1' });
    expect(c.WEBHOOK_URL).toBe('http://127.0.0.1:9000/hook');
    const named = loadConfig({ WEBHOOK_SECRET: SECRET, WEBHOOK_URL: 'https://receiver.example.net/hook' });
    expect(named.WEBHOOK_ALLOWED_TARGETS.hosts).toEqual(['receiver.example.net']);
  });

  it('a rotation: several secrets', () => {
    const next = `whsec_${randomBytes(24).toString('base64')}`;
    expect(loadConfig({ WEBHOOK_SECRET: `${SECRET} ${next}` }).WEBHOOK_SECRET).toEqual([SECRET, next]);
  });
});
