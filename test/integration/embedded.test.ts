/**
 * The embedded default (`npm start` without TEMPORAL_ADDRESS): the service starts its own Temporal dev server
 * with a SQLite file under DATA_DIR, renders through it, and keeps its renders across a restart.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../src/fake-comfyui/server.ts';
import { freePort } from '../support/ports.ts';
import { startService, type TestService } from '../support/service.ts';

let fake: FakeComfyUI;
let svc: TestService;
let temporalPort: number;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0 });
  temporalPort = await freePort();
  svc = await startService({
    comfyUrl: fake.url,
    env: { TEMPORAL_PORT: String(temporalPort), TEMPORAL_UI_PORT: String(await freePort()) },
  });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGTERM');
  await fake?.close();
});

describe('embedded mode', () => {
  it('starts Temporal with its SQLite file under DATA_DIR and prints the Web UI address', () => {
    expect(existsSync(path.join(svc.dataDir, 'temporal.db'))).toBe(true);
    expect(svc.output()).toMatch(/Temporal Web UI on http:\/\/127\.0\.0\.1:\d+/);
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
