/**
 * Fault suite, late binding over two GPU workers (one per ComfyUI, GPU_BACKENDS) and a separate front, all
 * on one shared GPU queue as in production:
 * - the worker whose ComfyUI runs a prompt is SIGKILLed for good: the next attempt is taken by the other
 *   worker, finds the earlier prompt still running on the first ComfyUI and follows it there (rendered once,
 *   nothing submitted to the second ComfyUI);
 * - a backend marked unhealthy takes no work from the queue: renders run on the other one, no attempt fails.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, beforeEach, describe, expect } from 'vitest';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { backendsFromUrls } from '../../src/backends/backends.ts';
import { BackendHealth } from '../../src/backends/health.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { SCHNELL, a1111, expectRenderedOnce, fakeStats, resetFake, scenario, setFaults, waitProgress, waitFor } from './helpers.ts';
import { runPromptAttempts } from './history.ts';

let temporal: TestTemporal;
let fakes: FakeComfyUI[];
let workers: TestService[];
let front: TestService;
let client: Client;
let dataDir: string;
let taskQueue: string;

const ENV = { STALL_TIMEOUT_MS: '6000', HEARTBEAT_TIMEOUT_MS: '3000', POLL_INTERVAL_MS: '200', SHUTDOWN_GRACE_MS: '1000' };
/** 40 steps of 200 ms: long enough to kill a worker in the middle. */
const LONG = { ...SCHNELL, steps: 40 };

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-late-'));
  taskQueue = `renders-late-${Date.now().toString(36)}`;
  [temporal, ...fakes] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: path.join(dataDir, 'comfyui-0'), stepMs: 50, logLevel: 'silent' }),
    startFakeComfyUI({ port: 0, dataDir: path.join(dataDir, 'comfyui-1'), stepMs: 50, logLevel: 'silent' }),
  ]);
  const common = { temporalAddress: temporal.address, comfyUrl: fakes.map((f) => f.url).join(','), dataDir, taskQueue };
  workers = await Promise.all(['comfyui-0', 'comfyui-1'].map((id) => startService({ ...common, mode: 'worker', env: { ...ENV, GPU_BACKENDS: id } })));
  front = await startService({ ...common, mode: 'api', env: ENV });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 120_000);

afterAll(async () => {
  await Promise.all([front?.kill('SIGKILL'), ...(workers ?? []).map((w) => w.kill('SIGKILL'))]);
  await Promise.all((fakes ?? []).map((f) => f.close().catch(() => undefined)));
  await client?.connection.close();
  await temporal?.stop();
});

beforeEach(async () => {
  for (const w of workers) if (w.child.exitCode !== null || w.child.signalCode !== null) await w.restart();
  for (const f of fakes) {
    await resetFake(f.url);
    await setFaults(f.url, { slow: { stepMs: 200 } });
  }
}, 60_000);

/** The fake (index) whose queue runs a prompt now, and that prompt. */
async function runningSomewhere(): Promise<{ index: number; promptId: string }> {
  return waitFor('a prompt to run on one of the ComfyUIs', async () => {
    for (const [index, f] of fakes.entries()) {
      const running = (await fakeStats(f.url)).queue.running[0];
      if (running) return { index, promptId: running };
    }
    return undefined;
  });
}

describe('late binding over two GPU workers', () => {
  scenario(
    'the worker running a prompt dies for good -> the other worker re-attaches to the prompt on the first ComfyUI, rendered once',
    async () => {
      const key = `late-kill-${Date.now()}`;
      const pending = a1111(front.url, 'txt2img', { ...LONG, prompt: 'kill its worker', seed: 41 }, { key });
      const { index, promptId } = await runningSomewhere();
      await waitProgress(fakes[index]!.url, promptId, 3);
      await workers[index]!.kill('SIGKILL');
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const [here, other] = [await fakeStats(fakes[index]!.url), await fakeStats(fakes[1 - index]!.url)];
      expectRenderedOnce([here, other], { prompts: 1 });
      expect(Object.keys(other.submissions)).toEqual([]);
      const attempts = await runPromptAttempts(client, renderIdForKey(key));
      expect(attempts.map((a) => a.outcome)).toEqual(['timed-out', 'completed']);
      // Followed where it lived: same prompt, reported on the first backend.
      expect(attempts[1]).toMatchObject({ promptId, backend: `comfyui-${index}` });
    },
    60_000,
  );

  // Last in the file: it stops the first ComfyUI (so the worker's probe cannot clear the mark).
  scenario('a backend marked unhealthy takes no more work: renders run on the other one', async () => {
    for (const f of fakes) await setFaults(f.url, { slow: { stepMs: 0 } });
    const [b0] = backendsFromUrls(fakes.map((f) => f.url));
    await fakes[0]!.close();
    new BackendHealth(dataDir).markUnhealthy(b0!, { reason: 'test: wedged' });
    const keys = [1, 2, 3, 4].map((i) => `late-unhealthy-${Date.now()}-${i}`);
    const results: Awaited<ReturnType<typeof a1111>>[] = [];
    for (const [i, key] of keys.entries()) results.push(await a1111(front.url, 'txt2img', { ...SCHNELL, prompt: 'elsewhere', seed: 50 + i }, { key }));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const all = await Promise.all(keys.map((key) => runPromptAttempts(client, renderIdForKey(key))));
    for (const attempts of all) expect(attempts.at(-1)).toMatchObject({ outcome: 'completed', backend: 'comfyui-1' });
    // The first worker may already have been polling with a slot when the mark appeared: that one attempt
    // fails at once saying why, and its next attempt runs elsewhere. After that it asks for no more work.
    const failed = all.flat().filter((a) => a.outcome !== 'completed');
    expect(failed.length).toBeLessThanOrEqual(1);
    for (const f of failed) expect(f.type).toBe('ComfyBackendUnhealthy');
  });
});
