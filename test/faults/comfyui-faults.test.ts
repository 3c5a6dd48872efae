/**
 * Fault suite, ComfyUI misbehaving under a running render: a hang, slow-but-alive progress, bursts of 500s on
 * /prompt (including a lost reply), a dropped WebSocket, execution errors (OOM and a node exception) and a
 * validation error. Real processes: Temporal dev server, the service (`start` mode) as a child process, the
 * protocol-faithful fake ComfyUI with fault controls. Every scenario checks the render completed exactly once
 * (fake stats) or failed with a clear reason, and what its history says about each attempt.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, beforeEach, describe, expect } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { SCHNELL, a1111, expectRenderedOnce, fakeStats, metricValue, resetFake, scenario, setFaults } from './helpers.ts';
import { runPromptAttempts } from './history.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-comfy-'));
  // A model whose VAE file ComfyUI does not have: the validation scenario.
  const models = path.join(dir, 'models.json');
  writeFileSync(models, JSON.stringify({ 'imagegen-qwen-image': { files: { vae: 'missing_vae.safetensors' } } }));
  [temporal, fake] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: path.join(dir, 'comfyui'), stepMs: 50, logLevel: 'silent' }),
  ]);
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    env: { STALL_TIMEOUT_MS: '2500', HEARTBEAT_TIMEOUT_MS: '10000', POLL_INTERVAL_MS: '200', MODELS_CONFIG: models },
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

describe('ComfyUI faults during a render', () => {
  scenario('hang: no events ever -> interrupted, retried with a new prompt id', async () => {
    await setFaults(fake.url, { hang: { count: 1 } });
    const t0 = Date.now();
    const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'hang', seed: 1 });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(Date.now() - t0).toBeLessThan(15_000);
    const stats = await fakeStats(fake.url);
    expectRenderedOnce(stats, { prompts: 2 });
    expect(Object.values(stats.outcomes).flat().sort()).toEqual(['interrupted', 'success']);
    const attempts = await runPromptAttempts(client, r.renderId!);
    expect(attempts.map((a) => `${a.outcome}:${a.type ?? ''}`)).toEqual(['failed:ComfyStall', 'completed:']);
    expect(attempts[0]!.message).toMatch(/stalled.*the prompt was interrupted/);
  });

  scenario('slow but alive: a silent model load and slow steps are not a stall', async () => {
    // 1.8 s silent first node (a model load) + 8 steps of 500 ms, against a 2.5 s stall timeout.
    await setFaults(fake.url, { slow: { stepMs: 500, renderMs: 1_800 } });
    const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'slow', seed: 2, steps: 8 });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
    expect((await runPromptAttempts(client, r.renderId!)).map((a) => a.outcome)).toEqual(['completed']);
  });

  scenario('bursts of 500s on /prompt -> retried with backoff, rendered once', async () => {
    await setFaults(fake.url, { promptHttp500: { count: 2 } });
    const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: '500s', seed: 3 });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
    const attempts = await runPromptAttempts(client, r.renderId!);
    expect(attempts.map((a) => `${a.outcome}:${a.type ?? ''}`)).toEqual(['failed:ComfyUnavailable', 'failed:ComfyUnavailable', 'completed:']);
    expect(attempts[0]!.message).toMatch(/HTTP 500/);
  });

  scenario('lost reply: /prompt queued the prompt but answered 500 -> the retry re-attaches, no second prompt', async () => {
    // What a crash between submit and the first heartbeat looks like: the prompt runs, nobody recorded it.
    await setFaults(fake.url, { promptHttp500: { count: 1, afterQueue: true }, slow: { stepMs: 200 } });
    const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'lost reply', seed: 4, steps: 10 });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const stats = await fakeStats(fake.url);
    expectRenderedOnce(stats, { prompts: 1 });
    const attempts = await runPromptAttempts(client, r.renderId!);
    expect(attempts.map((a) => a.outcome)).toEqual(['failed', 'completed']);
    // The second attempt's result is the first attempt's prompt.
    expect(Object.keys(stats.submissions)).toEqual([attempts[1]!.promptId]);
  });

  scenario('WebSocket dropped mid-render -> reconnect, reclaim the prompt socket, no false stall', async () => {
    // 10 steps of 300 ms (longer than the stall timeout after the drop: progress must keep arriving).
    await setFaults(fake.url, { slow: { stepMs: 300 }, dropWebSocket: { afterEvents: 12 } });
    const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'ws drop', seed: 5, steps: 12 });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const stats = await fakeStats(fake.url);
    expectRenderedOnce(stats, { prompts: 1 });
    expect(stats.faults.dropWebSocket).toBeNull(); // the drop happened
    expect(stats.websocket.connections).toBeGreaterThanOrEqual(2);
    expect((await runPromptAttempts(client, r.renderId!)).map((a) => a.outcome)).toEqual(['completed']);
  });

  scenario('execution_error CUDA OOM -> /free, then a retry renders', async () => {
    await setFaults(fake.url, { executionError: { type: 'oom' } });
    const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'oom', seed: 6 });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const stats = await fakeStats(fake.url);
    expectRenderedOnce(stats, { prompts: 2 });
    expect(stats.freeMemory).toBeGreaterThanOrEqual(1);
    const attempts = await runPromptAttempts(client, r.renderId!);
    expect(attempts.map((a) => `${a.outcome}:${a.type ?? ''}`)).toEqual(['failed:ComfyOutOfMemory', 'completed:']);
  });

  scenario('execution_error node exception -> 500 naming node and message, not retried', async () => {
    await setFaults(fake.url, { executionError: { type: 'exception', message: 'fake node exploded' } });
    const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'exception', seed: 7 });
    expect(r.status).toBe(500);
    expect(r.json.error).toBe('ComfyExecution');
    expect(r.json.detail).toMatch(/fake node exploded/);
    expect(r.json.node).toBe('sampler');
    expect(r.json.node_type).toBe('KSampler');
    expect(r.json.errors).toMatch(/RuntimeError: fake node exploded/);
    const stats = await fakeStats(fake.url);
    expect(Object.values(stats.executions)).toEqual([1]);
    expect(Object.values(stats.outcomes).flat()).toEqual(['error']);
    expect((await runPromptAttempts(client, r.renderId!)).map((a) => `${a.outcome}:${a.type ?? ''}`)).toEqual(['failed:ComfyExecution']);
  });

  scenario('validation error: a model file ComfyUI lacks -> 422 naming node, input and message, nothing queued', async () => {
    const r = await a1111(svc.url, 'txt2img', { model: 'imagegen-qwen-image', width: 128, height: 128, prompt: 'validation', seed: 8 });
    expect(r.status, JSON.stringify(r.json)).toBe(422);
    expect(r.json.error).toBe('ComfyValidation');
    expect(r.json.input).toBe('vae_name');
    expect(typeof r.json.node).toBe('string');
    expect(r.json.node_type).toBe('VAELoader');
    expect(r.json.errors).toMatch(/missing_vae\.safetensors/);
    expect(r.json.detail).toMatch(/missing_vae\.safetensors/);
    expect((await fakeStats(fake.url)).submissions).toEqual({});
    expect((await runPromptAttempts(client, r.renderId!)).map((a) => `${a.outcome}:${a.type ?? ''}`)).toEqual(['failed:ComfyValidation']);
  });

  scenario('metrics: renders by model and reason, attempts, stalls', async () => {
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metricValue(text, 'comfy_durable_renders_completed_total', { model: 'imagegen-flux-schnell' })).toBeGreaterThanOrEqual(6);
    expect(metricValue(text, 'comfy_durable_renders_failed_total', { model: 'imagegen-flux-schnell', reason: 'ComfyExecution' })).toBe(1);
    expect(metricValue(text, 'comfy_durable_renders_failed_total', { model: 'imagegen-qwen-image', reason: 'ComfyValidation' })).toBe(1);
    expect(metricValue(text, 'comfy_durable_prompt_stalls_total', { backend: 'comfyui-0', state: 'running' })).toBe(1);
    expect(metricValue(text, 'comfy_durable_prompt_attempts_total', { backend: 'comfyui-0', outcome: 'oom' })).toBe(1);
    expect(metricValue(text, 'comfy_durable_prompt_reattached_total', { backend: 'comfyui-0' })).toBe(1);
    expect(metricValue(text, 'comfy_durable_backend_healthy', { backend: 'comfyui-0' })).toBe(1);
    expect(text).toMatch(/comfy_durable_render_duration_seconds_bucket\{/);
  });
});
