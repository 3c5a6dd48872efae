/**
 * The embedded Temporal Web UI through the front (`TEMPORAL_UI=true`, API_TOKEN set) in a real headless
 * Chromium: the UI's page, its assets and its own API calls all go through `/temporal/` and the front's
 * guards, and it shows the render. Without the token the browser's requests get 401.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { freePort } from '../support/ports.ts';
import { startService, type TestService } from '../support/service.ts';
import { Browser, chromiumMissing, type Page } from './browser.ts';

const TOKEN = 'temporal-ui-e2e-token';
let fake: FakeComfyUI;
let svc: TestService;
let renderId = '';

describe.skipIf(chromiumMissing !== undefined)(`embedded Temporal UI in headless Chromium${chromiumMissing ? ` — skipped: ${chromiumMissing}` : ''}`, () => {
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    fake = await startFakeComfyUI({ port: 0, logLevel: 'silent' });
    svc = await startService({ comfyUrl: fake.url, env: { TEMPORAL_PORT: String(await freePort()), TEMPORAL_UI: 'true', API_TOKEN: TOKEN } });
    const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ prompt: 'seen in the temporal ui', model: 'imagegen-flux-schnell', width: 64, height: 64, steps: 1, seed: 3 }),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    renderId = res.headers.get('x-render-id') ?? '';
    browser = await Browser.launch();
    page = await browser.newPage();
  }, 180_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await svc?.kill('SIGTERM');
    await fake?.close();
  });

  it('without the token a page of the front\'s origin cannot use the UI\'s API', async () => {
    await page.goto(`${svc.url}/`);
    const statuses = await page.evaluate<number[]>(
      `Promise.all(['/temporal/', '/temporal/api/v1/namespaces/default/workflows'].map((u) => fetch(u).then((r) => r.status)))`,
    );
    expect(statuses).toEqual([401, 401]);
  });

  it('with the token, the UI loads through /temporal/ and lists the render from its own API calls', async () => {
    await page.setExtraHeaders({ authorization: `Bearer ${TOKEN}` });
    await page.goto(`${svc.url}/temporal/namespaces/default/workflows`);
    await page.waitFor(`document.body.innerText.includes(${JSON.stringify(renderId)})`, 60_000);
    // Its resources came from the guarded path, not from the UI process's own port.
    const urls = await page.evaluate<string[]>('performance.getEntriesByType("resource").map((e) => e.name)');
    expect(urls.some((u) => u.startsWith(`${svc.url}/temporal/api/v1/`))).toBe(true);
    expect(urls.filter((u) => u.startsWith('http') && !u.startsWith(`${svc.url}/`))).toEqual([]);
  }, 90_000);
});
