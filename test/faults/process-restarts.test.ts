/**
 * Fault suite, the restart matrix for our own processes: front (`api`) and worker run as separate child
 * processes on one task queue and data dir, as in production. The worker is SIGKILLed mid-render and
 * restarted (the new attempt re-attaches to the running prompt), drained with SIGTERM (the prompt keeps
 * running and is re-attached, not rendered again), the front is drained, stopped at once by a second signal,
 * and SIGKILLed while a client waits (the client retries with its Idempotency-Key). The same worker kill in the
 * middle of a video: the client still gets the MP4 it waited for. Plus the Idempotency-Key contract, and health
 * and metrics across the two processes.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, beforeEach, describe, expect } from 'vitest';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { BackendHealth } from '../../src/backends/health.ts';
import { ffprobe, videoStream } from '../support/ffprobe.ts';
import { freePort } from '../support/ports.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { SCHNELL, a1111, expectRenderedOnce, fakeStats, metricValue, resetFake, scenario, setFaults, waitFor, waitProgress, waitRunning } from './helpers.ts';
import { expectReattachedOnce, runPromptAttempts } from './history.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let worker: TestService;
let front: TestService;
let client: Client;
let metricsPort: number;

const ENV = { STALL_TIMEOUT_MS: '6000', HEARTBEAT_TIMEOUT_MS: '4000', POLL_INTERVAL_MS: '200', SHUTDOWN_GRACE_MS: '1000' };
/** 60 steps of 200 ms: a 12 s render, long enough to kill and restart a worker in the middle of it. */
const LONG = { ...SCHNELL, steps: 60 };
/** 6 s: enough to stop the front while a client waits. */
const MEDIUM = { ...SCHNELL, steps: 30 };

beforeAll(async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-procs-'));
  const taskQueue = `renders-procs-${Date.now().toString(36)}`;
  [temporal, fake, metricsPort] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: path.join(dataDir, 'comfyui'), stepMs: 50, logLevel: 'silent' }),
    freePort(),
  ]);
  const common = { temporalAddress: temporal.address, comfyUrl: fake.url, dataDir, taskQueue };
  worker = await startService({ ...common, mode: 'worker', env: { ...ENV, METRICS_PORT: String(metricsPort) } });
  front = await startService({ ...common, mode: 'api', env: ENV });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 400_000);

afterAll(async () => {
  await Promise.all([front?.kill('SIGKILL'), worker?.kill('SIGKILL')]);
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

beforeEach(async () => {
  // A scenario that failed half-way may have left a process down: the next one starts from a running pair.
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) await worker.restart();
  if (front.child.exitCode !== null || front.child.signalCode !== null) await front.restart();
  await resetFake(fake.url);
  await setFaults(fake.url, { slow: { stepMs: 200 } });
}, 400_000);

/** Waits for a child to exit on its own; returns its exit code and how long it took. */
async function exitOf(svc: TestService, timeoutMs: number): Promise<{ code: number | null; ms: number }> {
  const t0 = Date.now();
  const child = svc.child;
  if (child.exitCode !== null) return { code: child.exitCode, ms: 0 };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process did not exit within ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, ms: Date.now() - t0 });
    });
  });
}

describe('worker restarts', () => {
  scenario(
    'worker SIGKILLed mid-render, restarted -> the new attempt re-attaches, rendered once',
    async () => {
      const key = `kill-worker-${Date.now()}`;
      const pending = a1111(front.url, 'txt2img', { ...LONG, prompt: 'kill the worker', seed: 21 }, { key });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      await worker.kill('SIGKILL');
      await worker.restart();
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      await expectReattachedOnce(fake.url, client, renderIdForKey(key), promptId);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metricValue(metrics, 'comfy_durable_prompt_reattached_total', { backend: 'comfyui-0' })).toBe(1);
    },
    60_000,
  );

  scenario(
    'worker SIGTERM drains: the running prompt is handed over, not interrupted, and re-attached',
    async () => {
      const key = `drain-worker-${Date.now()}`;
      const pending = a1111(front.url, 'txt2img', { ...LONG, prompt: 'drain the worker', seed: 22 }, { key });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      worker.child.kill('SIGTERM');
      const exit = await exitOf(worker, 15_000);
      expect(exit.code).toBe(0);
      // Handed over: still running in ComfyUI, nobody interrupted it.
      const during = await fakeStats(fake.url);
      expect(during.queue.running).toEqual([promptId]);
      expect(during.interrupts).toBe(0);
      await worker.restart();
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
      const attempts = await runPromptAttempts(client, renderIdForKey(key));
      expect(attempts.at(-1)).toMatchObject({ outcome: 'completed', promptId });
      expect(attempts).toHaveLength(2);
    },
    60_000,
  );
});

describe('video worker restarts', () => {
  scenario(
    'worker SIGKILLed mid-video, restarted -> the new attempt re-attaches, rendered once, the MP4 plays',
    async () => {
      // 61 steps of 200 ms: a 12 s sampler, long enough to kill and restart a worker in the middle of it.
      const body = { model: 'videogen-minimax-h3', prompt: 'kill the worker mid-video', size: '192x128', num_frames: 22, num_inference_steps: 61, seed: 31 };
      const pending = fetch(`${front.url}/v1/videos/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      await worker.kill('SIGKILL');
      await worker.restart();
      const res = await pending;
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(res.status, bytes.toString().slice(0, 500)).toBe(200);
      const file = path.join(front.dataDir, 'killed.mp4');
      writeFileSync(file, bytes);
      const p = await ffprobe(file);
      expect(videoStream(p)).toMatchObject({ codec_name: 'h264', width: 192, height: 128, nb_read_frames: '22' });
      expect(p.streams.some((s) => s.codec_type === 'audio')).toBe(true);
      await expectReattachedOnce(fake.url, client, res.headers.get('x-render-id')!, promptId);
    },
    90_000,
  );
});

describe('renders that end while a handed-over prompt still runs', () => {
  scenario(
    'a render cancelled while its prompt was handed back by a stopping worker: the prompt is stopped, not left on the GPU',
    async () => {
      const key = `cancel-handed-over-${Date.now()}`;
      // The sampler keeps running until interrupted, however long the worker takes to come back (60 steps of
      // 200 ms were not enough for a worker restart on a loaded machine): only the cancellation can end it.
      await setFaults(fake.url, { hang: { nodeClass: 'KSampler', count: 1 } });
      const pending = a1111(front.url, 'txt2img', { ...LONG, prompt: 'cancel the orphan', seed: 31 }, { key });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      worker.child.kill('SIGTERM');
      expect((await exitOf(worker, 60_000)).code).toBe(0);
      // No worker: the attempt was handed back and the prompt keeps running in ComfyUI. Cancel the render now,
      // before any attempt can re-attach.
      await client.workflow.getHandle(renderIdForKey(key)).cancel();
      await worker.restart();
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(409);
      const stats = await waitFor(
        'the handed-over prompt to be stopped',
        async () => {
          const st = await fakeStats(fake.url);
          return st.queue.running.length === 0 && st.queue.pending.length === 0 ? st : undefined;
        },
        90_000,
      );
      expect(stats.outcomes[promptId]).not.toContain('success');
      expect(Object.keys(stats.executions)).toEqual([promptId]);
    },
    150_000,
  );
});

describe('front restarts', () => {
  scenario('front SIGTERM drains: a waiting client still gets its images, then the front exits', async () => {
    const pending = a1111(front.url, 'txt2img', { ...SCHNELL, steps: 15, prompt: 'drain the front', seed: 23 });
    const promptId = await waitRunning(fake.url);
    front.child.kill('SIGTERM');
    const [r, exit] = await Promise.all([pending, exitOf(front, 30_000)]);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(exit.code).toBe(0);
    expect((await fakeStats(fake.url)).outcomes[promptId]).toEqual(['success']);
    await front.restart();
  });

  scenario('a second signal exits at once, the render goes on; the client retries with its Idempotency-Key', async () => {
    const key = `second-signal-${Date.now()}`;
    const body = { ...MEDIUM, prompt: 'second signal', seed: 24 };
    const pending = a1111(front.url, 'txt2img', body, { key }).catch((e: unknown) => e);
    const promptId = await waitRunning(fake.url);
    front.child.kill('SIGTERM');
    // Signals within a second are one Ctrl+C delivered twice; a later one means "now".
    await new Promise((r) => setTimeout(r, 1_300));
    const t0 = Date.now();
    front.child.kill('SIGTERM');
    const exit = await exitOf(front, 5_000);
    expect(exit.code).toBe(130);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(await pending).toBeInstanceOf(Error); // the connection died with the front
    await front.restart();
    const r = await a1111(front.url, 'txt2img', body, { key });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.renderId).toBe(renderIdForKey(key));
    const stats = await fakeStats(fake.url);
    expectRenderedOnce(stats, { prompts: 1 });
    expect(stats.outcomes[promptId]).toEqual(['success']);
  });

  scenario('front SIGKILLed while a client waits; the client retries with its Idempotency-Key and gets the same render', async () => {
    const key = `kill-front-${Date.now()}`;
    const body = { ...MEDIUM, prompt: 'kill the front', seed: 25 };
    const pending = a1111(front.url, 'txt2img', body, { key }).catch((e: unknown) => e);
    await waitRunning(fake.url);
    await front.kill('SIGKILL');
    expect(await pending).toBeInstanceOf(Error);
    await front.restart();
    const r = await a1111(front.url, 'txt2img', body, { key });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.images).toHaveLength(1);
    expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
  });
});

describe('render outcomes counted where they happen', () => {
  scenario(
    'a render that completes while its front is down is counted once, by the worker',
    async () => {
      const workerMetrics = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const completed = async () => metricValue(await workerMetrics(), 'comfy_durable_renders_completed_total', { model: SCHNELL.model }) ?? 0;
      const before = await completed();
      const key = `count-after-front-restart-${Date.now()}`;
      const body = { ...MEDIUM, prompt: 'count me once', seed: 28 };
      const pending = a1111(front.url, 'txt2img', body, { key }).catch((e: unknown) => e);
      const promptId = await waitRunning(fake.url);
      await front.kill('SIGKILL');
      expect(await pending).toBeInstanceOf(Error);
      // Nobody waits for it now; it completes in ComfyUI and the workflow ends.
      await waitFor('the prompt to finish', async () => (await fakeStats(fake.url)).outcomes[promptId]?.includes('success'), 60_000, 200);
      await waitFor('the worker to count the render', async () => (await completed()) === before + 1, 30_000, 200);
      await front.restart();
      // The client's retry attaches to the finished render: no second count anywhere.
      const r = await a1111(front.url, 'txt2img', body, { key });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(await completed()).toBe(before + 1);
      const frontMetrics = await (await fetch(`${front.url}/metrics`)).text();
      expect(metricValue(frontMetrics, 'comfy_durable_renders_completed_total', { model: SCHNELL.model }) ?? 0).toBe(0);
    },
    120_000,
  );
});

describe('Idempotency-Key', () => {
  scenario('attach while running, same images after it finished, 409 for a different body', async () => {
    const key = `idem-${Date.now()}`;
    const body = { ...SCHNELL, steps: 15, prompt: 'idempotent', seed: 26 };
    const first = a1111(front.url, 'txt2img', body, { key });
    await waitRunning(fake.url);
    const second = a1111(front.url, 'txt2img', body, { key });
    const [a, b] = await Promise.all([first, second]);
    expect(a.status, JSON.stringify(a.json)).toBe(200);
    expect(b.status, JSON.stringify(b.json)).toBe(200);
    expect(b.renderId).toBe(a.renderId);
    expect(b.json.images).toEqual(a.json.images);
    const stats = await fakeStats(fake.url);
    expectRenderedOnce(stats, { prompts: 1 });

    const t0 = Date.now();
    const c = await a1111(front.url, 'txt2img', body, { key });
    expect(c.status).toBe(200);
    expect(c.json.images).toEqual(a.json.images);
    expect(Date.now() - t0).toBeLessThan(2_000); // no render: the finished workflow's result
    expect((await fakeStats(fake.url)).submissions).toEqual(stats.submissions);

    const d = await a1111(front.url, 'txt2img', { ...body, seed: 27 }, { key });
    expect(d.status).toBe(409);
    expect(d.json.field).toBe('Idempotency-Key');
    expect((await fakeStats(fake.url)).submissions).toEqual(stats.submissions);
  });
});

describe('health and metrics across processes', () => {
  scenario("the front's /health and gauge see the worker's unhealthy mark in DATA_DIR; the worker's probe clears it", async () => {
    // Written the way the worker's escalation writes it: the front is another process and reads the file.
    const backend = { id: 'comfyui-0', url: fake.url };
    const marks = new BackendHealth(front.dataDir);
    // The worker's probe clears the mark at any moment (it is meant to, below): an observation counts only when
    // the mark was still there after it, so it was there for both reads. A probe in between marks it again.
    let observed = false;
    for (let i = 0; i < 10 && !observed; i++) {
      marks.markUnhealthy(backend, { reason: 'test: a prompt ignored interrupt and /free', stuckPromptId: '00000000-0000-8000-8000-000000000000' });
      const h = await fetch(`${front.url}/health`);
      const body = JSON.stringify(await h.json());
      const gauge = metricValue(await (await fetch(`${front.url}/metrics`)).text(), 'comfy_durable_backend_healthy', { backend: 'comfyui-0' });
      if (!marks.get(backend)) continue;
      expect(h.status).toBe(503);
      expect(body).toMatch(/ignored interrupt/);
      expect(gauge).toBe(0);
      observed = true;
    }
    expect(observed, 'the mark outlived one /health and /metrics read in ten tries').toBe(true);
    // That prompt is not in ComfyUI's queue: the worker's probe finds the backend usable and clears the mark.
    await waitFor('the worker to clear the mark', async () => (await fetch(`${front.url}/health`)).status === 200, 15_000, 200);
    expect(metricValue(await (await fetch(`${front.url}/metrics`)).text(), 'comfy_durable_backend_healthy', { backend: 'comfyui-0' })).toBe(1);
    const frontMetrics = await (await fetch(`${front.url}/metrics`)).text();
    expect(metricValue(frontMetrics, 'comfy_durable_renders_started_total', { model: 'imagegen-flux-schnell' })).toBeGreaterThanOrEqual(1);
    const workerMetrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metricValue(workerMetrics, 'comfy_durable_prompt_attempts_total', { backend: 'comfyui-0', outcome: 'success' })).toBeGreaterThanOrEqual(1);
  });
});
