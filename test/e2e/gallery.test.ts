/**
 * The gallery page (`GET /`) in a real headless Chromium against the real stack, with an API token set:
 * the page asks for the token, then shows renders with thumbnails (fetched with the token), escapes user
 * text, and its Replay button starts a linked replay of a failed render.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { RenderTimeline } from '../../src/operators/types.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { Browser, chromiumMissing, type Page } from './browser.ts';
import { expectImageRender } from '../../src/contracts/render.ts';

const TOKEN = 'gallery-test-token';
const XSS_OK = `<img src=x onerror="window.__xss = 'prompt'"> a red fox`;
const XSS_FAIL = `</p><script>window.__xss = 'script'</script><b>bold?</b>`;

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
const ids = { ok: '', failed: '' };

const auth = { authorization: `Bearer ${TOKEN}` };

async function txt2img(body: Record<string, unknown>): Promise<{ status: number; id: string }> {
  const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return { status: res.status, id: res.headers.get('x-render-id') ?? '' };
}

describe.skipIf(chromiumMissing !== undefined)(`gallery page in headless Chromium${chromiumMissing ? ` — skipped: ${chromiumMissing}` : ''}`, () => {
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    temporal = await startTestTemporal();
    fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
    svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { API_TOKEN: TOKEN } });
    const ok = await txt2img({ prompt: XSS_OK, model: 'imagegen-flux-schnell', width: 192, height: 128, seed: 11 });
    expect(ok.status).toBe(200);
    ids.ok = ok.id;
    await fetch(`${fake.url}/__fake/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ executionError: { type: 'exception', count: 1, message: 'gallery <b>boom</b>' } }),
    });
    const failed = await txt2img({ prompt: XSS_FAIL, model: 'imagegen-flux-schnell', width: 128, height: 128, seed: 12 });
    expect(failed.status).toBe(500);
    ids.failed = failed.id;
    browser = await Browser.launch();
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await svc?.kill('SIGKILL');
    await fake?.close();
    await temporal?.stop();
  });

  it('the page itself is public; the data behind it needs the token', async () => {
    const html = await fetch(`${svc.url}/`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(html.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await fetch(`${svc.url}/gallery/app.js`)).status).toBe(200);
    expect((await fetch(`${svc.url}/renders`)).status).toBe(401);
    expect((await fetch(`${svc.url}/renders`, { headers: auth })).status).toBe(200);
  });

  it('asks for the token, then shows the renders with thumbnails', async () => {
    await page.goto(`${svc.url}/`);
    await page.waitFor("document.body.dataset.loaded === 'error' && !document.getElementById('token').hidden");
    await page.evaluate(`(() => {
      const form = document.getElementById('token-form');
      form.elements.namedItem('token').value = ${JSON.stringify(TOKEN)};
      form.requestSubmit();
    })()`);
    await page.waitFor(`document.querySelectorAll('.card').length === 2`);
    await page.waitFor(
      `(() => { const i = document.querySelector('.card[data-status="completed"] .thumb img'); return i && i.complete && i.naturalWidth > 0; })()`,
    );
    const ok = await page.evaluate<{ src: string; width: number; prompt: string; markup: number; model: string; facts: string }>(`(() => {
      const c = document.querySelector('[data-render-id="${ids.ok}"]');
      const img = c.querySelector('.thumb img');
      return { src: img.src, width: img.naturalWidth, prompt: c.querySelector('.prompt').textContent, markup: c.querySelectorAll('.prompt *').length,
               model: c.querySelector('.model').textContent, facts: c.querySelector('.facts').textContent };
    })()`);
    // <img> cannot carry the bearer token: the page fetched the bytes and shows a blob: URL.
    expect(ok.src).toMatch(/^blob:/);
    expect(ok.width).toBe(192);
    expect(ok.prompt).toBe(XSS_OK);
    expect(ok.markup).toBe(0);
    expect(ok.model).toBe('imagegen-flux-schnell');
    expect(ok.facts).toContain('192x128');
    expect(ok.facts).toContain('11');

    const failed = await page.evaluate<{ status: string; prompt: string; reason: string; replay: boolean; thumb: boolean; temporal: boolean }>(`(() => {
      const c = document.querySelector('[data-render-id="${ids.failed}"]');
      return { status: c.dataset.status, prompt: c.querySelector('.prompt').textContent, reason: c.querySelector('.reason').textContent,
               replay: !!c.querySelector('button.replay'), thumb: !!c.querySelector('.thumb img'), temporal: !!c.querySelector('a.temporal') };
    })()`);
    expect(failed).toEqual({
      status: 'failed',
      prompt: XSS_FAIL,
      reason: expect.stringContaining('gallery <b>boom</b>'),
      replay: true,
      thumb: false,
      temporal: false,
    });
    expect(await page.evaluate('window.__xss === undefined && document.querySelectorAll("script").length === 1')).toBe(true);
    await page.screenshot(path.join(process.env.GALLERY_SCREENSHOT_DIR ?? os.tmpdir(), 'gallery-e2e.png'), true);
  });

  it('the Replay button starts a replay of the failed render, linked to it, and the page shows it', async () => {
    await page.evaluate(`document.querySelector('[data-render-id="${ids.failed}"] button.replay').click()`);
    await page.waitFor(`document.querySelector('[data-render-id="${ids.failed}"] button.replay').dataset.replayId`);
    const replayId = await page.evaluate<string>(`document.querySelector('[data-render-id="${ids.failed}"] button.replay').dataset.replayId`);
    expect(replayId).toMatch(/^render-/);
    await page.waitFor(`document.querySelector('[data-render-id="${replayId}"]')`, 10_000);
    // The fault is used up: the replay renders. The page refreshes itself while it runs.
    await page.waitFor(
      `(() => { const i = document.querySelector('[data-render-id="${replayId}"] .thumb img'); return i && i.complete && i.naturalWidth > 0; })()`,
      20_000,
    );
    expect(await page.evaluate<string>(`document.querySelector('[data-render-id="${replayId}"] .replay-of a').textContent`)).toBe(ids.failed);
    const tl = (await (await fetch(`${svc.url}/renders/${replayId}`, { headers: auth })).json()) as RenderTimeline;
    expect(tl.status).toBe('completed');
    expect(tl.replayOf).toBe(ids.failed);
    expect(tl.request?.seed).toBe(12);
    expect(expectImageRender(tl.request!).prompt).toBe(XSS_FAIL);
    expect(await page.evaluate('window.__xss === undefined')).toBe(true);
    // The only errors: the first requests made before the token was given.
    expect(page.errors.filter((e) => !e.includes('401'))).toEqual([]);
  });
});
