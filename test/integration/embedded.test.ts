/**
 * The embedded default (`npm start` without TEMPORAL_ADDRESS): the service starts its own Temporal dev server
 * with a SQLite file under DATA_DIR, renders through it, and keeps its renders across a restart. With
 * TEMPORAL_UI=true the Web UI is served through the front's guards, over HTTP and in a real headless Chromium.
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { freePort } from '../support/ports.ts';
import { startService, type TestService } from '../support/service.ts';
import { retentionScheduleId } from '../../src/retention/schedule.ts';
import { Browser, chromiumMissing, type Page } from '../e2e/browser.ts';

let fake: FakeComfyUI;
let svc: TestService;
let temporalPort: number;
let uiPort: number;

/** Whether something accepts TCP connections on host:port. */
function listening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** This machine's first non-loopback IPv4 address, if it has one. */
const externalIp = (): string | undefined =>
  Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0 });
  temporalPort = await freePort();
  uiPort = await freePort();
  svc = await startService({
    comfyUrl: fake.url,
    env: { TEMPORAL_PORT: String(temporalPort), TEMPORAL_UI_PORT: String(uiPort) },
  });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGTERM');
  await fake?.close();
});

describe('embedded mode', () => {
  it('starts Temporal with its SQLite file under DATA_DIR, without the Web UI unless asked for (red-team: open UI)', async () => {
    expect(existsSync(path.join(svc.dataDir, 'temporal.db'))).toBe(true);
    expect(svc.output()).not.toMatch(/Temporal Web UI on/);
    expect(await listening('127.0.0.1', uiPort)).toBe(false);
    // The gallery links to no UI.
    expect(await fetch(`${svc.url}/`).then((r) => r.text())).toMatch(/name="temporal-ui" content=""/);
  });

  it('sets the default render retention (7 days) on the embedded namespace', async () => {
    const { Connection } = await import('@temporalio/client');
    const c = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
    try {
      const ns = await c.workflowService.describeNamespace({ namespace: 'default' });
      expect(Number(ns.config?.workflowExecutionRetentionTtl?.seconds)).toBe(7 * 86_400);
    } finally {
      await c.close();
    }
  });

  it('keeps the gRPC port on loopback', async () => {
    expect(await listening('127.0.0.1', temporalPort)).toBe(true);
    const ip = externalIp();
    if (ip) expect(await listening(ip, temporalPort)).toBe(false);
  });

  it('renders, and the render is still visible after the whole service restarts', async () => {
    const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'embedded-restart' },
      body: JSON.stringify({ prompt: 'embedded', model: 'imagegen-flux-schnell', width: 128, height: 128, seed: 5 }),
    });
    expect(res.status).toBe(200);
    const first = (await res.json()) as { images: string[] };

    // SIGTERM drains and stops the embedded server too; start again on the same data dir.
    expect(await svc.kill('SIGTERM')).toBe(0);
    await svc.restart();

    const again = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'embedded-restart' },
      body: JSON.stringify({ prompt: 'embedded', model: 'imagegen-flux-schnell', width: 128, height: 128, seed: 5 }),
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { images: string[] }).images).toEqual(first.images);
    // The same key attached to the finished render: ComfyUI rendered once.
    const stats = (await fetch(`${fake.url}/__fake/stats`).then((r) => r.json())) as { executions: Record<string, number> };
    expect(Object.keys(stats.executions)).toHaveLength(1);
  });
});

describe('embedded mode with TEMPORAL_UI=true', () => {
  let withUi: TestService;
  let uiProcessPort: number;
  const token = 'ui-test-token';
  const bearer = { authorization: `Bearer ${token}` };
  /** A request with the Host header as given (fetch would not send a foreign one). */
  const raw = (
    method: string,
    route: string,
    headers: Record<string, string>,
    body?: string,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: withUi.port, method, path: route, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end(body);
    });

  beforeAll(async () => {
    withUi = await startService({
      comfyUrl: fake.url,
      env: { TEMPORAL_PORT: String(await freePort()), TEMPORAL_UI: 'true', API_TOKEN: token },
    });
    uiProcessPort = Number(/listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(withUi.output())?.[1]);
  }, 120_000);
  afterAll(async () => {
    await withUi?.kill('SIGTERM');
  });

  it("serves the UI at the front's /temporal/, with a warning naming the residual loopback port", () => {
    expect(withUi.output()).toMatch(new RegExp(`Temporal Web UI on http://127\\.0\\.0\\.1:${withUi.port}/temporal/`));
    expect(withUi.output()).toMatch(/WARNING: TEMPORAL_UI is on: .*behind the front's Host check and API_TOKEN/);
    expect(uiProcessPort).toBeGreaterThan(0);
    expect(uiProcessPort).not.toBe(withUi.port);
  });

  it('refuses a foreign Host (DNS rebinding), for pages, API calls and POSTs, token or not', async () => {
    for (const [method, route] of [
      ['GET', '/temporal/'],
      ['GET', '/temporal/api/v1/namespaces/default/workflows'],
      ['POST', '/temporal/api/v1/namespaces/default/workflows/nope/terminate'],
    ] as const) {
      const res = await raw(method, route, { host: 'evil.example', ...bearer, 'content-type': 'application/json' }, method === 'POST' ? '{}' : undefined);
      expect(res.status, `${method} ${route}`).toBe(403);
      expect(res.text).toMatch(/host evil\.example is not served here/);
    }
  });

  it("answers 401 without the token (a Basic challenge for a page, none for the UI's fetches)", async () => {
    const page = await raw('GET', '/temporal/', { host: `127.0.0.1:${withUi.port}`, 'sec-fetch-mode': 'navigate' });
    expect(page.status).toBe(401);
    expect(page.headers['www-authenticate']).toMatch(/^Basic/);
    const api = await raw('GET', '/temporal/api/v1/settings', { host: `localhost:${withUi.port}`, 'sec-fetch-mode': 'cors' });
    expect(api.status).toBe(401);
    expect(api.headers['www-authenticate']).toBeUndefined();
    const post = await raw(
      'POST',
      '/temporal/api/v1/namespaces/default/workflows/nope/terminate',
      { host: `127.0.0.1:${withUi.port}`, 'content-type': 'application/json' },
      '{}',
    );
    expect(post.status).toBe(401);
    const wrong = await raw('GET', '/temporal/', { host: `127.0.0.1:${withUi.port}`, authorization: 'Bearer nope' });
    expect(wrong.status).toBe(401);
  });

  it('with the token on a loopback Host: the page loads, its API answers, a CSRF-protected POST reaches Temporal', async () => {
    const page = await fetch(`${withUi.url}/temporal/`, { headers: bearer });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toMatch(/\/temporal\/_app\//);
    // Basic with the token as password works too: what a browser sends after the challenge above.
    const basic = await fetch(`${withUi.url}/temporal/api/v1/settings`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` },
    });
    expect(basic.status).toBe(200);
    expect(((await basic.json()) as { Version: string }).Version).toMatch(/^\d+\./);
    const csrf = /_csrf=([^;]+)/.exec(basic.headers.get('set-cookie') ?? '')?.[1];
    expect(csrf).toBeTruthy();

    // What the UI's pages show comes from these calls: here the retention schedule the worker created.
    const list = await fetch(`${withUi.url}/temporal/api/v1/namespaces/default/schedules`, { headers: bearer });
    expect(list.status).toBe(200);
    expect(await list.text()).toContain(`"${retentionScheduleId(withUi.taskQueue)}"`);

    // A same-origin POST (as the UI's own fetch sends it) with the CSRF pair: Temporal's own answer comes back.
    const post = await fetch(`${withUi.url}/temporal/api/v1/namespaces/default/workflows/no-such-render/terminate`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json', origin: withUi.url, cookie: `_csrf=${csrf}`, 'x-csrf-token': csrf! },
      body: JSON.stringify({ reason: 'through the guard' }),
    });
    expect(post.status).toBe(404);
    expect(await post.text()).toMatch(/workflow not found for ID: no-such-render/);
    // The same POST from another origin is refused by the front before it reaches the UI.
    const cross = await fetch(`${withUi.url}/temporal/api/v1/namespaces/default/workflows/no-such-render/terminate`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json', origin: 'http://evil.example', cookie: `_csrf=${csrf}`, 'x-csrf-token': csrf! },
      body: '{}',
    });
    expect(cross.status).toBe(403);
  });

  it('the gallery links to the guarded path; the UI process listens on loopback only', async () => {
    expect(await fetch(`${withUi.url}/`).then((r) => r.text())).toMatch(/name="temporal-ui" content="\/temporal"/);
    expect(await listening('127.0.0.1', uiProcessPort)).toBe(true);
    const ip = externalIp();
    if (ip) expect(await listening(ip, uiProcessPort)).toBe(false);
  });

  // The UI's page, its assets and its own API calls all go through `/temporal/` and the front's guards, and it
  // shows the render. Without the token the browser's requests get 401.
  describe.skipIf(chromiumMissing !== undefined)(`in headless Chromium${chromiumMissing ? ` — skipped: ${chromiumMissing}` : ''}`, () => {
    let browser: Browser;
    let page: Page;
    let renderId = '';

    beforeAll(async () => {
      const res = await fetch(`${withUi.url}/sdapi/v1/txt2img`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer },
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
    });

    it("without the token a page of the front's origin cannot use the UI's API", async () => {
      await page.goto(`${withUi.url}/`);
      const statuses = await page.evaluate<number[]>(
        `Promise.all(['/temporal/', '/temporal/api/v1/namespaces/default/workflows'].map((u) => fetch(u).then((r) => r.status)))`,
      );
      expect(statuses).toEqual([401, 401]);
    });

    it('with the token, the UI loads through /temporal/ and lists the render from its own API calls', async () => {
      await page.setExtraHeaders(bearer);
      await page.goto(`${withUi.url}/temporal/namespaces/default/workflows`);
      await page.waitFor(`document.body.innerText.includes(${JSON.stringify(renderId)})`, 60_000);
      // Its resources came from the guarded path, not from the UI process's own port.
      const urls = await page.evaluate<string[]>('performance.getEntriesByType("resource").map((e) => e.name)');
      expect(urls.some((u) => u.startsWith(`${withUi.url}/temporal/api/v1/`))).toBe(true);
      expect(urls.filter((u) => u.startsWith('http') && !u.startsWith(`${withUi.url}/`))).toEqual([]);
    }, 90_000);
  });
});
