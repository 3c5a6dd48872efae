/**
 * Fault suite, the Temporal server itself: the dev server is stopped mid-render and started again on the same
 * SQLite file. The worker keeps following its prompt while Temporal is away, the front keeps waiting for the
 * result (Temporal unreachable is not the render's failure), and the render completes exactly once.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { SCHNELL, a1111, expectRenderedOnce, fakeStats, scenario, setFaults, waitProgress, waitRunning } from './helpers.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-temporal-'));
  [temporal, fake] = await Promise.all([
    startTestTemporal(dir),
    startFakeComfyUI({ port: 0, dataDir: path.join(dir, 'comfyui'), stepMs: 50, logLevel: 'silent' }),
  ]);
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    env: { STALL_TIMEOUT_MS: '6000', HEARTBEAT_TIMEOUT_MS: '5000', POLL_INTERVAL_MS: '200' },
  });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

describe('Temporal restarts', () => {
  scenario(
    'Temporal dev server stopped and restarted mid-render on the same SQLite file -> the render completes once',
    async () => {
      await setFaults(fake.url, { slow: { stepMs: 200 } });
      const key = `temporal-restart-${Date.now()}`;
      const pending = a1111(svc.url, 'txt2img', { ...SCHNELL, steps: 40, prompt: 'temporal restart', seed: 31 }, { key });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      await temporal.stop();
      // Down for a few seconds while the prompt keeps rendering.
      await new Promise((r) => setTimeout(r, 3_000));
      await temporal.restart();
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json.images).toHaveLength(1);
      const stats = await fakeStats(fake.url);
      expectRenderedOnce(stats, { prompts: 1 });
      expect(stats.outcomes[promptId]).toEqual(['success']);
      // The same render (not a new one) answers a retry with the same key.
      const again = await a1111(svc.url, 'txt2img', { ...SCHNELL, steps: 40, prompt: 'temporal restart', seed: 31 }, { key });
      expect(again.status).toBe(200);
      expect(again.json.images).toEqual(r.json.images);
    },
    90_000,
  );
});
