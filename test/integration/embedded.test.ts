/**
 * The embedded default (`npm start` without TEMPORAL_ADDRESS): the service starts its own Temporal dev server
 * with a SQLite file under DATA_DIR, renders through it, and keeps its renders across a restart.
 */
import { existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../src/fake-comfyui/server.ts';
import { freePort } from '../support/ports.ts';
import { startService, type TestService } from '../support/service.ts';

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
  it('serves the UI on loopback only, with a warning printed', async () => {
    const ui = await freePort();
    const withUi = await startService({
      comfyUrl: fake.url,
      env: { TEMPORAL_PORT: String(await freePort()), TEMPORAL_UI_PORT: String(ui), TEMPORAL_UI: 'true' },
    });
    try {
      expect(withUi.output()).toMatch(new RegExp(`Temporal Web UI on http://127\\.0\\.0\\.1:${ui}`));
      expect(withUi.output()).toMatch(/WARNING: TEMPORAL_UI is on: .*no login/);
      expect(await listening('127.0.0.1', ui)).toBe(true);
      const ip = externalIp();
      if (ip) expect(await listening(ip, ui)).toBe(false);
    } finally {
      await withUi.kill('SIGTERM');
    }
  }, 120_000);
});
