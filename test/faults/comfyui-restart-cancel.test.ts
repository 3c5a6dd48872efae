/**
 * Fault suite, part 2: ComfyUI wedged (a hang deaf to interrupts: escalation to /free, then the backend is
 * marked unhealthy, visible in /health and the metrics, and recovers when ComfyUI is restarted), ComfyUI
 * restarted mid-render with its queue, history AND input files gone (new attempt, inputs uploaded again),
 * and cancellation: a cancelled render interrupts its prompt before the workflow ends, `/sdapi/v1/interrupt`
 * cancels the render on the GPU, a client disconnect does not cancel by default. (With CANCEL_ON_DISCONNECT=true
 * a disconnect cancels the render's workflow: test/unit/api-red-team.test.ts over a real socket; what a cancelled
 * workflow does to its prompt is the first cancellation scenario here.)
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, beforeEach, describe, expect } from 'vitest';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { redSquare } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { SCHNELL, a1111, expectRenderedOnce, fakeStats, metricValue, resetFake, scenario, setFaults, waitFor, waitProgress, waitRunning } from './helpers.ts';
import { runPromptAttempts } from './history.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let fakePort: number;
let fakeDir: string;
let svc: TestService;
let client: Client;

const STEP_MS = 50;
const startFake = async (): Promise<FakeComfyUI> => startFakeComfyUI({ port: fakePort, dataDir: fakeDir, stepMs: STEP_MS, logLevel: 'silent' });

beforeAll(async () => {
  fakeDir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-restart-'));
  [temporal, fake] = await Promise.all([startTestTemporal(), startFakeComfyUI({ port: 0, dataDir: fakeDir, stepMs: STEP_MS, logLevel: 'silent' })]);
  fakePort = fake.port;
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    env: { STALL_TIMEOUT_MS: '2500', HEARTBEAT_TIMEOUT_MS: '10000', POLL_INTERVAL_MS: '200' },
  });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

beforeEach(async () => {
  await resetFake(fake.url);
});

/** Close the fake and start it again on the same port and data dir: queue and history are gone. */
async function restartFake(opts: { wipeInputs?: boolean } = {}): Promise<void> {
  await fake.close();
  if (opts.wipeInputs) {
    const input = path.join(fakeDir, 'input');
    for (const f of readdirSync(input)) rmSync(path.join(input, f), { recursive: true, force: true });
  }
  fake = await startFake();
}

async function health(): Promise<{ status: number; body: { checks: { name: string; ok: boolean; detail?: string }[] } }> {
  const res = await fetch(`${svc.url}/health`);
  return { status: res.status, body: (await res.json()) as { checks: { name: string; ok: boolean; detail?: string }[] } };
}

describe('ComfyUI wedged or restarted', () => {
  scenario(
    'hang deaf to interrupts -> /free -> backend unhealthy in /health and metrics -> ComfyUI restarted -> render completes once',
    async () => {
      await setFaults(fake.url, { hang: { count: 1, ignoreInterrupt: true } });
      const pending = a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'wedged', seed: 11 });
      const unhealthy = await waitFor(
        'the backend to be marked unhealthy',
        async () => {
          const h = await health();
          const c = h.body.checks.find((x) => x.name === 'comfyui:comfyui-0');
          return h.status === 503 && c && !c.ok && /unhealthy/.test(c.detail ?? '') ? c : undefined;
        },
        30_000,
        200,
      );
      expect(unhealthy.detail).toMatch(/interrupt and \/free/);
      const metrics = await (await fetch(`${svc.url}/metrics`)).text();
      expect(metricValue(metrics, 'comfy_durable_backend_healthy', { backend: 'comfyui-0' })).toBe(0);
      expect(metricValue(metrics, 'comfy_durable_backend_escalations_total', { backend: 'comfyui-0', step: 'free' })).toBe(1);
      expect(metricValue(metrics, 'comfy_durable_backend_escalations_total', { backend: 'comfyui-0', step: 'unhealthy' })).toBe(1);
      const before = await fakeStats(fake.url);
      expect(before.freeMemory).toBe(0); // /free is only acted on between prompts: the hang keeps it pending
      expect(before.interrupts).toBeGreaterThanOrEqual(1);
      expect(before.queue.running).toHaveLength(1);

      // The operator (or a supervisor) restarts ComfyUI: the backend recovers and the render goes on.
      await restartFake();
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const after = await fakeStats(fake.url);
      expectRenderedOnce([before, after], { prompts: 2 });
      await waitFor('the backend to be healthy again', async () => (await health()).status === 200, 15_000, 200);
      const metricsAfter = await (await fetch(`${svc.url}/metrics`)).text();
      expect(metricValue(metricsAfter, 'comfy_durable_backend_healthy', { backend: 'comfyui-0' })).toBe(1);
      const attempts = await runPromptAttempts(client, r.renderId!);
      expect(attempts[0]).toMatchObject({ outcome: 'failed', type: 'ComfyStall' });
      expect(attempts[0]!.message).toMatch(/backend marked unhealthy/);
      expect(attempts.at(-1)!.outcome).toBe('completed');
      // Attempts in between, if any, found the backend still wedged and said so.
      for (const a of attempts.slice(1, -1)) expect(a.type).toBe('ComfyBackendUnhealthy');
    },
    60_000,
  );

  scenario('ComfyUI restarted mid-render, inputs lost -> new attempt uploads them again, rendered once', async () => {
    await setFaults(fake.url, { slow: { stepMs: 150 } });
    const init = redSquare(64).toString('base64');
    const pending = a1111(svc.url, 'img2img', { ...SCHNELL, prompt: 'restart', seed: 12, steps: 20, init_images: [init], denoising_strength: 0.6 });
    const first = await waitRunning(fake.url);
    await waitProgress(fake.url, first, 2);
    const before = await fakeStats(fake.url);
    await restartFake({ wipeInputs: true });
    const r = await pending;
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const after = await fakeStats(fake.url);
    expect(after.submissions[first]).toBeUndefined();
    expectRenderedOnce([before, after], { prompts: 2 });
    expect(Object.values(before.outcomes)).toEqual([]); // the first run died with the old process
    expect(readdirSync(path.join(fakeDir, 'input')).length).toBeGreaterThan(0);
    const attempts = await runPromptAttempts(client, r.renderId!);
    expect(attempts.map((a) => `${a.outcome}:${a.type ?? ''}`)).toEqual(['failed:ComfyPromptLost', 'completed:']);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    // Each late-bound attempt uploads its inputs to the ComfyUI it runs on before submitting, so the new
    // attempt found them there (the input folder above is filled again) and never met a missing LoadImage
    // file: the lost-input re-upload inside an attempt was not needed.
    expect(metricValue(metrics, 'comfy_durable_input_reuploads_total', { backend: 'comfyui-0' }) ?? 0).toBe(0);
  });
});

describe('cancellation', () => {
  const slow = async (): Promise<void> => setFaults(fake.url, { slow: { stepMs: 200 } });

  scenario('cancelling a render interrupts its ComfyUI prompt before the workflow ends', async () => {
    await slow();
    const key = `cancel-${Date.now()}`;
    const pending = a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'cancel me', seed: 13, steps: 40 }, { key });
    const promptId = await waitRunning(fake.url);
    await waitProgress(fake.url, promptId, 2);
    const handle = client.workflow.getHandle(renderIdForKey(key));
    await handle.cancel();
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    // The workflow has ended: its prompt must already be stopped in ComfyUI.
    const stats = await fakeStats(fake.url);
    expect(stats.queue.running).toEqual([]);
    expect(stats.outcomes[promptId]).toEqual(['interrupted']);
    const r = await pending;
    expect(r.status).toBe(409);
    expect(r.json.error).toBe('Cancelled');
    expect((await handle.describe()).status.name).toBe('CANCELLED');
  });

  scenario('POST /sdapi/v1/interrupt stops the prompt on the GPU; the waiting request answers 200 as A1111 does', async () => {
    await slow();
    const pending = a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'interrupt me', seed: 14, steps: 40 });
    const promptId = await waitRunning(fake.url);
    await waitProgress(fake.url, promptId, 2);
    const res = await fetch(`${svc.url}/sdapi/v1/interrupt`, { method: 'POST' });
    expect(res.status).toBe(200);
    const r = await pending;
    expect(r.status).toBe(200);
    // As A1111: the interrupted image answers with what was rendered (its last preview), said in info.
    expect(r.json.images).toHaveLength(1);
    expect(JSON.parse(r.json.info ?? '{}')).toMatchObject({ interrupted: true, partial: [0] });
    const stats = await fakeStats(fake.url);
    expect(stats.outcomes[promptId]).toEqual(['interrupted']);
    expect(Object.keys(stats.submissions)).toEqual([promptId]);
  });

  scenario('a client that disconnects does not cancel its render (default)', async () => {
    await slow();
    const key = `disconnect-${Date.now()}`;
    const ac = new AbortController();
    const pending = a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'keep going', seed: 15, steps: 15 }, { key, signal: ac.signal }).catch((e: unknown) => e);
    const promptId = await waitRunning(fake.url);
    ac.abort();
    await pending;
    const result = await client.workflow.getHandle(renderIdForKey(key)).result();
    expect(result.outputs).toHaveLength(1);
    const stats = await fakeStats(fake.url);
    expect(stats.outcomes[promptId]).toEqual(['success']);
    expectRenderedOnce(stats, { prompts: 1 });
  });
});
