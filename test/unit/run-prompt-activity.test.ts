/**
 * `runPrompt`'s phases, in-process: the activity runs in Temporal's MockActivityEnvironment against the
 * in-process fake ComfyUI (no worker, no Temporal server, no spawned process).
 * - submit → follow → collect: the first heartbeat names the backend, the next the prompt; the outputs are
 *   in the blob store.
 * - re-attach: a later attempt of the same item finds the earlier attempt's prompt and follows it instead of
 *   submitting again (one submission on the fake).
 * - stall: a node that hangs is stopped in ComfyUI and the attempt fails with the stall's type.
 * - cancel: the render cancelled mid-prompt interrupts the prompt in ComfyUI before the activity ends; cancelled
 *   after sampling, the item answers with its last preview, marked partial.
 * - restart: an attempt abandoned by its worker (shutdown) leaves its prompt running; the next attempt finds it
 *   there, follows it to its end and submits nothing.
 * - timed out on the server: the prompt is left running too, and its ComfyUI stays busy in the pool (no slot of
 *   the shared queue, no other prompt) until the prompt has left ComfyUI's queue, or for at most the stall timeout
 *   (a held prompt is then the retry's to re-attach to and follow).
 * - retried submit: the same attempt run again after ComfyUI queued its prompt but the answer was lost finds
 *   the prompt under its id and follows it: one submission.
 * - GPU entry shutdown (`stopPromptOnShutdown`): the prompt is stopped, since the GPU goes to another group.
 * - out of memory: ComfyUI's memory is freed before the attempt fails.
 * - a backend marked unhealthy that still does not answer: the attempt fails at once, naming the mark, and
 *   sends nothing. (One that dies mid-prompt is test/faults/dead-backend.test.ts: its budget is 10 s of refusals.)
 * Each waits on the fake's own state or the activity's heartbeats, never on a fixed time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRunPrompt } from '../../src/activities/run-prompt.ts';
import type { ActivityDeps } from '../../src/activities/deps.ts';
import type { PromptHeartbeat, RunPromptInput } from '../../src/contracts/activities.ts';
import type { PromptRun } from '../../src/contracts/render.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { BackendHealth } from '../../src/backends/health.ts';
import { GpuPool } from '../../src/backends/gpu-pool.ts';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { ComfyClient } from '../../src/comfyui/client.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/log.ts';
import { planRender } from '../../src/models/plan.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { ctx as normalizeCtx } from '../golden/helpers.ts';
import { freePort } from '../support/ports.ts';

let fake: FakeComfyUI;
let dataDir: string;
let deps: ActivityDeps;
let pool: GpuPool;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0 });
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'run-prompt-activity-'));
  const config = loadConfig({ DATA_DIR: dataDir, POLL_INTERVAL_MS: '50' });
  const logger = createLogger('silent');
  const backend = { id: 'gpu0', url: fake.url };
  const health = new BackendHealth(dataDir, logger);
  deps = {
    config,
    blobs: new FsBlobStore(path.join(dataDir, 'blobs')),
    backends: [backend],
    // As the service's: a socket kept open ahead of the next prompt.
    clients: new Map([[backend.id, new ComfyClient({ baseUrl: backend.url, logger, keepSocketAhead: true })]]),
    logger,
    health,
  };
  pool = new GpuPool([backend], health);
});

afterAll(async () => {
  await Promise.all([...deps.clients.values()].map((c) => c.closeSocketAhead()));
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
});

beforeEach(async () => {
  await fake.state.reset();
});

let renders = 0;
/** One txt2img item of a small Flux render, as the workflow hands it to runPrompt. */
function attemptInput(renderId: string, attempt: number, over: Partial<RunPromptInput> = {}): RunPromptInput {
  const request = normalizeRequest('txt2img', { prompt: 'a lighthouse', seed: 7, width: 64, height: 64, steps: 4 }, normalizeCtx()).request;
  const plan = planRender(request, { renderId });
  return { renderId, item: 0, attempt, graph: plan.items[0]!.graph, stallTimeoutMs: 5_000, model: request.model, request, ...over };
}

/** A mock activity context of render `renderId`'s workflow; its heartbeats are collected. */
function activityEnv(renderId: string, activityAttempt = 1) {
  const env = new MockActivityEnvironment(
    { workflowExecution: { workflowId: renderId, runId: `run-${renderId}` }, heartbeatTimeoutMs: 60_000, attempt: activityAttempt },
    { logger: new DefaultLogger('ERROR') },
  );
  const beats: PromptHeartbeat[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(structuredClone(d as PromptHeartbeat)));
  return { env, beats };
}

/** Resolves once `cond` holds, checked on every heartbeat of `env` (the activity heartbeats at least every second). */
function onHeartbeat(env: MockActivityEnvironment, cond: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (!cond()) return;
      env.off('heartbeat', check);
      resolve();
    };
    env.on('heartbeat', check);
    check();
  });
}

/** One runPrompt attempt in `env` (with `over` in its dependencies, on `on`'s backends). */
const runIn = (env: MockActivityEnvironment, input: RunPromptInput, over: Partial<ActivityDeps> = {}, on: GpuPool = pool): Promise<PromptRun> => {
  const runPrompt = createRunPrompt({ ...deps, ...over }, on);
  return env.run<[RunPromptInput], PromptRun, typeof runPrompt>(runPrompt, input);
};

/** The failure an attempt ended with (it must fail). */
const failureOf = (running: Promise<PromptRun>): Promise<{ type?: string; message: string }> =>
  running.then(
    () => expect.fail('the attempt succeeded'),
    (e: unknown) => e as { type?: string; message: string },
  );

/** The graph's node id of class `classType` (the planned graphs name their nodes by number). */
function nodeOf(input: RunPromptInput, classType: string): string {
  const id = Object.keys(input.graph).find((k) => input.graph[k]!.class_type === classType);
  if (id === undefined) throw new Error(`no ${classType} in the graph`);
  return id;
}

/**
 * Attempt 1 of `renderId` held at its sampler, then told to stop with `reason` (the SDK's cancellation reason):
 * the id of the prompt it left in ComfyUI.
 */
async function abandonAtSampler(
  renderId: string,
  reason: 'WORKER_SHUTDOWN' | 'TIMED_OUT',
  on: GpuPool = pool,
  over: Partial<RunPromptInput> = {},
): Promise<string> {
  const first = attemptInput(renderId, 1, over);
  const sampler = nodeOf(first, 'KSampler');
  fake.state.faults.apply({ hold: [{ nodeClass: 'KSampler' }] });
  const one = activityEnv(renderId);
  const abandoned = runIn(one.env, first, {}, on);
  await onHeartbeat(one.env, () => one.beats.some((b) => b.node === sampler));
  const promptId = one.beats.at(-1)!.promptId;
  one.env.cancel(reason);
  await expect(abandoned).rejects.toBeDefined();
  return promptId;
}

const submissions = () => Object.values(fake.state.statsSnapshot().submissions).reduce((a, b) => a + b, 0);

describe('runPrompt in MockActivityEnvironment on the in-process fake', () => {
  it('submit, follow, collect: the backend is heartbeated first, then the prompt; the image is stored', async () => {
    const renderId = `render-phases-${++renders}`;
    const { env, beats } = activityEnv(renderId);
    const run = await runIn(env, attemptInput(renderId, 1));
    expect(beats[0]).toMatchObject({ backend: 'gpu0', promptId: '', attempt: 1 });
    expect(beats.some((b) => b.promptId === run.promptId)).toBe(true);
    expect(run).toMatchObject({ attempt: 1, backend: 'gpu0' });
    expect(run.outputs).toHaveLength(1);
    expect(run.outputs[0]!.mime).toBe('image/png');
    expect(await deps.blobs.has(run.outputs[0]!.sha256)).toBe(true);
    expect(run.timings.map((t) => t.stage)).toEqual(expect.arrayContaining(['prompt', 'collectOutputs']));
    expect(submissions()).toBe(1);
  });

  it("re-attach: attempt 2 follows attempt 1's prompt instead of submitting it again", async () => {
    const renderId = `render-reattach-${++renders}`;
    const first = await runIn(activityEnv(renderId).env, attemptInput(renderId, 1));
    const second = await runIn(activityEnv(renderId).env, attemptInput(renderId, 2, { previousBackends: ['gpu0'] }));
    expect(second.promptId).toBe(first.promptId);
    expect(second.attempt).toBe(2);
    expect(submissions()).toBe(1);
  });

  it("stall: a hung node is stopped in ComfyUI and the attempt fails with the stall's type", async () => {
    fake.state.faults.apply({ hang: { count: 1, nodeClass: 'KSampler' } });
    const renderId = `render-stall-${++renders}`;
    const { env } = activityEnv(renderId);
    const failure = await runIn(env, attemptInput(renderId, 1, { stallTimeoutMs: 1_000 })).then(
      () => expect.fail('a hung prompt succeeded'),
      (e: unknown) => e as { type?: string; message: string },
    );
    expect(failure.type).toMatch(/Stall/i);
    expect(fake.state.statsSnapshot().interrupts).toBeGreaterThan(0);
  });

  it('cancel: the render cancelled mid-prompt interrupts it in ComfyUI before the activity ends', async () => {
    fake.state.faults.apply({ hang: { count: 1, nodeClass: 'KSampler' } });
    const renderId = `render-cancel-${++renders}`;
    const { env, beats } = activityEnv(renderId);
    const running = runIn(env, attemptInput(renderId, 1));
    await onHeartbeat(env, () => beats.some((b) => b.promptId !== '' && b.node !== undefined));
    env.cancel('CANCELLED');
    await expect(running).rejects.toBeDefined();
    expect(fake.state.statsSnapshot().interrupts).toBeGreaterThan(0);
    expect(fake.state.statsSnapshot().queue.running).toEqual([]);
  });

  it('cancelled after sampling: the prompt is stopped and the item answers with its last preview, marked partial', async () => {
    const renderId = `render-partial-${++renders}`;
    const input = attemptInput(renderId, 1);
    const decode = nodeOf(input, 'VAEDecode');
    fake.state.faults.apply({ hold: [{ nodeClass: 'VAEDecode' }] });
    const { env, beats } = activityEnv(renderId);
    const running = runIn(env, input);
    await onHeartbeat(env, () => beats.some((b) => b.node === decode));
    env.cancel('CANCELLED');
    const run = await running;
    expect(run.partial).toBeDefined();
    expect(run.outputs).toHaveLength(1);
    expect(await deps.blobs.has(run.outputs[0]!.sha256)).toBe(true);
    expect(fake.state.statsSnapshot().interrupts).toBeGreaterThan(0);
    expect(fake.state.statsSnapshot().queue.running).toEqual([]);
  });

  it('restart: the next attempt re-attaches to the prompt a shut-down worker left running, and submits nothing', async () => {
    const renderId = `render-restart-${++renders}`;
    const promptId = await abandonAtSampler(renderId, 'WORKER_SHUTDOWN');
    // Left running for the next attempt: not interrupted, still on the GPU.
    expect(fake.state.statsSnapshot()).toMatchObject({ interrupts: 0, queue: { running: [promptId] } });

    // The restarted worker: a new pool (the stopped one keeps its ComfyUI busy until the prompt is gone).
    const two = activityEnv(renderId);
    const resumed = runIn(two.env, attemptInput(renderId, 2, { previousBackends: ['gpu0'] }), {}, new GpuPool(deps.backends, deps.health));
    await onHeartbeat(two.env, () => two.beats.some((b) => b.promptId === promptId));
    expect(fake.state.release()).toBe(true);
    const run = await resumed;
    expect(run).toMatchObject({ promptId, attempt: 2, backend: 'gpu0' });
    expect(run.outputs).toHaveLength(1);
    expect(submissions()).toBe(1);
  });

  it('timed out on the server: the prompt is left running, and its ComfyUI gets no other prompt until it has left the queue', async () => {
    const gpu = new GpuPool(deps.backends, deps.health);
    const slots = gpu.slotSupplier();
    const renderId = `render-timed-out-${++renders}`;
    const promptId = await abandonAtSampler(renderId, 'TIMED_OUT', gpu);
    expect(fake.state.statsSnapshot()).toMatchObject({ interrupts: 0, queue: { running: [promptId] } });
    // The worker polls the shared queue for this ComfyUI no more; an attempt already here waits for it.
    expect(slots.tryReserveSlot({ slotType: 'activity', taskQueue: 'renders-gpu', workerIdentity: 'w', workerBuildId: '', isSticky: false })).toBeNull();
    const otherId = `render-after-timeout-${++renders}`;
    const other = activityEnv(otherId);
    const next = runIn(other.env, attemptInput(otherId, 1), {}, gpu);
    await onHeartbeat(other.env, () => other.beats.some((b) => b.queued === true));
    expect(submissions()).toBe(1);
    expect(fake.state.release()).toBe(true);
    const run = await next;
    expect(run.outputs).toHaveLength(1);
    const runs = fake.state.statsSnapshot().runs;
    expect(runs.map((r) => r.promptId)).toEqual([promptId, run.promptId]);
    expect(runs[1]!.startedAt).toBeGreaterThanOrEqual(runs[0]!.endedAt!);
  });

  it('timed out on the server, the prompt still held past the stall timeout: its ComfyUI is free again, and the retry re-attaches to it', async () => {
    const gpu = new GpuPool(deps.backends, deps.health);
    const renderId = `render-timed-out-held-${++renders}`;
    const promptId = await abandonAtSampler(renderId, 'TIMED_OUT', gpu, { stallTimeoutMs: 300 });
    // The retry on the same worker gets the backend once the bound has passed (it would wait for the held prompt
    // to leave the queue, which nobody follows, without it), finds the prompt and follows it: one submission.
    const retry = activityEnv(renderId);
    const second = runIn(retry.env, attemptInput(renderId, 2), {}, gpu);
    await onHeartbeat(retry.env, () => retry.beats.some((b) => b.promptId === promptId));
    expect(submissions()).toBe(1);
    expect(fake.state.release()).toBe(true);
    const run = await second;
    expect(run.promptId).toBe(promptId);
    expect(run.outputs).toHaveLength(1);
  });

  it('retried submit: ComfyUI queued the prompt but its answer was lost; the attempt run again follows it, one submission', async () => {
    fake.state.faults.apply({ promptHttp500: { count: 1, afterQueue: true } });
    const renderId = `render-resubmit-${++renders}`;
    const failure = await failureOf(runIn(activityEnv(renderId).env, attemptInput(renderId, 1)));
    expect(failure.message).toMatch(/500/);
    // Temporal's retry of the same activity (the same input, so the same prompt id): its attempt 2.
    const { env, beats } = activityEnv(renderId, 2);
    const run = await runIn(env, attemptInput(renderId, 1));
    expect(beats.some((b) => b.promptId === run.promptId)).toBe(true);
    expect(run.outputs).toHaveLength(1);
    expect(fake.state.statsSnapshot().submissions).toEqual({ [run.promptId]: 1 });
  });

  it("a new attempt's first submit does not ask ComfyUI for its prompt id first: no request ever carried it (the id is the attempt's)", async () => {
    const client = deps.clients.get('gpu0')!;
    const asked: string[] = [];
    const promptStatus = client.promptStatus.bind(client);
    client.promptStatus = (id, opts) => (asked.push(id), promptStatus(id, opts));
    try {
      const renderId = `render-first-submit-${++renders}`;
      const run = await runIn(activityEnv(renderId).env, attemptInput(renderId, 1));
      expect(run.outputs).toHaveLength(1);
      expect(asked).not.toContain(run.promptId);
      expect(fake.state.statsSnapshot().submissions).toEqual({ [run.promptId]: 1 });
    } finally {
      client.promptStatus = promptStatus;
    }
  });

  it('GPU entry shutdown: the prompt is stopped in ComfyUI, since the GPU goes to another group', async () => {
    const renderId = `render-handed-away-${++renders}`;
    const input = attemptInput(renderId, 1);
    const sampler = nodeOf(input, 'KSampler');
    fake.state.faults.apply({ hold: [{ nodeClass: 'KSampler' }] });
    const { env, beats } = activityEnv(renderId);
    const running = runIn(env, input, { stopPromptOnShutdown: true });
    await onHeartbeat(env, () => beats.some((b) => b.node === sampler));
    env.cancel('WORKER_SHUTDOWN');
    await expect(running).rejects.toBeDefined();
    expect(fake.state.statsSnapshot().interrupts).toBeGreaterThan(0);
    expect(fake.state.statsSnapshot().queue.running).toEqual([]);
  });

  it('out of memory: ComfyUI frees its memory before the attempt fails', async () => {
    fake.state.faults.apply({ executionError: { type: 'oom', node: 'first-sampler', count: 1 } });
    const renderId = `render-oom-${++renders}`;
    const failure = await failureOf(runIn(activityEnv(renderId).env, attemptInput(renderId, 1)));
    expect(failure.type).toBe('ComfyOutOfMemory');
    expect(fake.state.statsSnapshot()).toMatchObject({ freeMemory: 1, unloadModelsRequests: 1 });
  });

  it('a backend marked unhealthy that still does not answer: the attempt fails at once, before anything is sent', async () => {
    const backend = { id: 'gpu-gone', url: `http://127.0.0.1:${await freePort()}` };
    const over = { backends: [backend], clients: new Map([[backend.id, new ComfyClient({ baseUrl: backend.url, logger: deps.logger })]]) };
    deps.health.markUnhealthy(backend, { reason: 'refuses connections (test)' });
    const renderId = `render-unhealthy-${++renders}`;
    const { env, beats } = activityEnv(renderId);
    const failure = await failureOf(runIn(env, attemptInput(renderId, 1), over, new GpuPool([backend], deps.health)));
    expect(failure.type).toBe('ComfyBackendUnhealthy');
    expect(failure.message).toMatch(/refuses connections \(test\)/);
    expect(beats.every((b) => b.promptId === '')).toBe(true);
  });
});
