/**
 * Sharing one GPU with llama-swap, end to end: the deployment guide's own config (docs/llama-swap.example.yaml)
 * run by the llama-swap stand-in (test/support/llama-swap-standin.ts), with the real comfy-durable processes it
 * starts (the front entry in `start` mode, the GPU entry in `gpu` mode), the fake ComfyUI and a dummy LLM in the
 * exclusive group. Every wait is on an event (the stand-in's, the fake's stats, an HTTP answer), never a sleep.
 */
import { writeDummyLlm } from '../support/dummy-llm.ts';
import { mkdtempSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { expectRenderedOnce, fakeStats, resetFake, setFaults, waitFor } from '../faults/helpers.ts';
import { LlamaSwapStandin } from '../support/llama-swap-standin.ts';
import { freePort } from '../support/ports.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'cd-llama-swap-'));
const dataDir = path.join(tmp, 'data');
const TTL_S = 3;
/** Every image and video graph decodes with VAEDecode: the prompt is held there, mid-render, until released. */
const HOLD = [{ nodeClass: 'VAEDecode' }];
const GRACE_MS = 2_000;
const LEASE_TOKEN = 'stand-in-lease-secret';

let fake: FakeComfyUI;
let ls: LlamaSwapStandin;

const VIDEO = { model: 'videogen-wan22-5b', prompt: 'a kite over a beach', size: '320x192', num_frames: 9, fps: 24, num_inference_steps: 2, seed: 3 };
const IMAGE = { model: 'imagegen-flux-schnell', prompt: 'a fox', steps: 2, width: 64, height: 64, seed: 11 };

async function post(route: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${ls.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = { raw: text };
  }
  return { status: res.status, json };
}

const videoStatus = async (id: string): Promise<string> =>
  ((await (await fetch(`${ls.url}/upstream/imagegen-flux-dev/v1/videos/${id}`)).json()) as { status: string }).status;
/** A prompt is running and held at its VAEDecode (the fake has taken the hold from its list). */
const waitHeld = (): Promise<string> =>
  waitFor(
    'a prompt held mid-render on the fake ComfyUI',
    async () => {
      const st = await fakeStats(fake.url);
      return st.faults.hold.length === 0 && st.queue.running[0];
    },
    180_000,
    100,
  );
const since = (mark: number, type: string, model: string) => ls.events.slice(mark).filter((e) => e.type === type && e.model === model);

beforeAll(async () => {
  fake = await startFakeComfyUI({ stepMs: 150 });
  const [lsPort, frontPort, gpuPort, temporalPort, llmPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const llm = writeDummyLlm(tmp);
  ls = new LlamaSwapStandin({
    config: readFileSync(path.join(root, 'docs', 'llama-swap.example.yaml'), 'utf8'),
    port: lsPort,
    macros: {
      comfy_durable: root,
      data_dir: dataDir,
      comfyui_url: fake.url,
      llama_swap: `http://127.0.0.1:${lsPort}`,
      front_port: String(frontPort),
      gpu_port: String(gpuPort),
      temporal_port: String(temporalPort),
    },
    overrides: {
      // GPU_LEASE_TOKEN comes from llama-swap's own environment in the guide (never printed): given here per entry.
      'comfy-gpu': { ttl: TTL_S, env: [`SHUTDOWN_GRACE_MS=${GRACE_MS}`, 'LOG_LEVEL=info', `GPU_LEASE_TOKEN=${LEASE_TOKEN}`] },
      'imagegen-flux-dev': { env: ['LOG_LEVEL=info', 'TEMPORAL_TASK_QUEUE=renders', `GPU_LEASE_TOKEN=${LEASE_TOKEN}`] },
      llm: { cmd: `${process.execPath} ${llm} ${llmPort}`, proxy: `http://127.0.0.1:${llmPort}`, checkEndpoint: '/health' },
    },
  });
  await ls.listen();
  // The guide preloads the front: llama-swap starts it (and its Temporal) by itself.
  await ls.waitFor((e) => e.type === 'ready' && e.model === 'imagegen-flux-dev');
}, 240_000);

afterAll(async () => {
  // The entries' own logs, for a failure's post-mortem.
  for (const id of ls?.entries.keys() ?? []) writeFileSync(path.join(tmp, `${id}.log`), ls.output(id));
  process.stdout.write(`llama-swap stand-in entry logs: ${tmp}\n`);
  await ls?.close();
  await fake?.close();
}, 120_000);

describe("comfy-durable and an LLM share one GPU through llama-swap (stand-in, the guide's config)", () => {
  it('lists every model id, the entry id included, and hides the GPU entry', async () => {
    const ids = ((await (await fetch(`${ls.url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
    expect(ids).toEqual(
      expect.arrayContaining(['imagegen-flux-dev', 'imagegen-flux-schnell', 'imagegen-qwen-image-edit', 'videogen-wan22-5b', 'videogen-minimax-h3', 'llm']),
    );
    expect(ids).not.toContain('comfy-gpu');
  });

  it('an async video started just before an LLM request completes without any poll; the LLM runs after it, never beside it', async () => {
    await resetFake(fake.url);
    const mark = ls.events.length;
    const started = await post('/upstream/imagegen-flux-dev/v1/videos', VIDEO);
    expect(started.status, JSON.stringify(started.json)).toBeLessThan(300);
    const chat = await post('/v1/chat/completions', { model: 'llm', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.status).toBe(200);
    // The LLM request waited: llama-swap queued it behind the GPU entry's lease.
    expect(since(mark, 'queued', 'llm').length).toBeGreaterThan(0);
    const llmSpawn = since(mark, 'spawn', 'llm')[0]!;
    const gpuExit = since(mark, 'exit', 'comfy-gpu')[0]!;
    expect(gpuExit.at).toBeLessThanOrEqual(llmSpawn.at);
    const stats = await fakeStats(fake.url);
    expect(stats.runs).toHaveLength(1);
    expect(stats.runs[0]!.endedAt).not.toBeNull();
    expect(stats.runs[0]!.endedAt!).toBeLessThanOrEqual(llmSpawn.at);
    // The GPU entry gave the VRAM back before the LLM started.
    expect(stats.unloadModelsRequests).toBeGreaterThan(0);
    expectRenderedOnce(stats, { prompts: 1 });
    // The first status poll, after the LLM answered: already done.
    expect(await videoStatus(started.json.id)).toBe('completed');
  }, 240_000);

  it("a ComfyUI prompt (ComfyUI's own API) sent while the LLM holds the GPU waits for the lease: it runs only once the LLM is stopped", async () => {
    await resetFake(fake.url);
    const mark = ls.events.length;
    const chat = await post('/v1/chat/completions', { model: 'llm', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.status).toBe(200);
    // The LLM holds the GPU now (it answered; an earlier test may have loaded it already, so no spawn is awaited).
    const llmServedAt = Date.now();
    const graph = JSON.parse(readFileSync(path.join(root, 'test', 'golden', 'imagegen-flux-schnell-txt2img.json'), 'utf8')) as Record<string, any>;
    graph.latent.inputs.width = 64;
    graph.latent.inputs.height = 64;
    graph.sampler.inputs.steps = 2;
    const queued = await post('/upstream/imagegen-flux-dev/prompt', { prompt: graph });
    expect(queued.status, JSON.stringify(queued.json)).toBe(200);
    const id = queued.json.prompt_id as string;
    const item = await waitFor(
      'the prompt in /history',
      async () => ((await (await fetch(`${ls.url}/upstream/imagegen-flux-dev/history/${id}`)).json()) as Record<string, any>)[id],
      180_000,
      250,
    );
    expect(item.status.status_str).toBe('success');
    // The LLM had the GPU when the prompt came: it was stopped first, and the prompt ran after that.
    const llmExit = since(mark, 'exit', 'llm')[0]!;
    const stats = await fakeStats(fake.url);
    expect(stats.runs).toHaveLength(1);
    expect(stats.runs[0]!.startedAt).toBeGreaterThanOrEqual(llmExit.at);
    expect(llmServedAt).toBeLessThanOrEqual(llmExit.at);
    expectRenderedOnce(stats, { prompts: 1 });
  }, 240_000);

  it('a manual unload of the GPU entry mid-render loses nothing and renders nothing twice; the pending render brings the GPU back', async () => {
    await resetFake(fake.url);
    await setFaults(fake.url, { hold: HOLD });
    const mark = ls.events.length;
    const render = post('/sdapi/v1/txt2img', IMAGE);
    const held = await waitHeld();
    // The GPU entry's /health, through llama-swap, says its ComfyUI is up.
    const gpuHealth = (await (await fetch(`${ls.url}/upstream/comfy-gpu/health`)).json()) as { ready: boolean; comfyui: Record<string, string> };
    expect(gpuHealth.ready).toBe(true);
    expect(Object.values(gpuHealth.comfyui)).toEqual(['up']);
    const freesBefore = (await fakeStats(fake.url)).unloadModelsRequests;
    const unload = await fetch(`${ls.url}/api/models/unload/comfy-gpu`, { method: 'POST' });
    expect(unload.status).toBe(200);
    // Stopped: its prompt outlived the drain, so it was stopped in ComfyUI before the entry exited (the GPU may
    // go to another group then), and ComfyUI was asked to unload.
    const exit = await ls.waitFor((e) => e.type === 'exit' && e.model === 'comfy-gpu', mark);
    const afterExit = await fakeStats(fake.url);
    expect(afterExit.outcomes[held]).toEqual(['interrupted']);
    expect(afterExit.runs.find((r) => r.promptId === held)!.endedAt!).toBeLessThanOrEqual(exit.at);
    expect(afterExit.unloadModelsRequests).toBeGreaterThan(freesBefore);
    // No client request: the front's lease asks llama-swap for the GPU again; the next attempt renders afresh.
    const done = await render;
    expect(done.status, JSON.stringify(done.json).slice(0, 300)).toBe(200);
    expect(done.json.images).toHaveLength(1);
    expect(since(mark, 'ready', 'comfy-gpu').length).toBeGreaterThan(0);
    // One complete render: the interrupted prompt never finished, the second one once.
    expectRenderedOnce(await fakeStats(fake.url), { prompts: 2 });
  }, 240_000);

  it('a manual unload while an LLM request waits behind a prompt that outlasts SHUTDOWN_GRACE_MS: no prompt runs while the LLM has the GPU', async () => {
    await resetFake(fake.url);
    await setFaults(fake.url, { hold: HOLD });
    const mark = ls.events.length;
    const render = post('/sdapi/v1/txt2img', { ...IMAGE, seed: 13 });
    const held = await waitHeld();
    // The LLM request queues behind the lease; then the GPU entry is unloaded by hand (which does not wait for it).
    const chat = post('/v1/chat/completions', { model: 'llm', messages: [{ role: 'user', content: 'hi' }] });
    await ls.waitFor((e) => e.type === 'queued' && e.model === 'llm', mark);
    const unload = await fetch(`${ls.url}/api/models/unload/comfy-gpu`, { method: 'POST' });
    expect(unload.status).toBe(200);
    expect((await chat).status).toBe(200);
    const llmStart = since(mark, 'spawn', 'llm')[0]!.at;
    // By the time the LLM was started, the held prompt had been stopped in ComfyUI (not left running beside it).
    const atLlm = await fakeStats(fake.url);
    expect(atLlm.outcomes[held], 'the held prompt was still running when the LLM got the GPU').toEqual(['interrupted']);
    expect(atLlm.runs.find((r) => r.promptId === held)!.endedAt!).toBeLessThanOrEqual(llmStart);
    const done = await render;
    expect(done.status, JSON.stringify(done.json).slice(0, 300)).toBe(200);
    expect(done.json.images).toHaveLength(1);
    const llmSpawn = since(mark, 'spawn', 'llm')[0]!;
    // The GPU came back to the render only after the LLM was stopped again (exclusive group).
    const llmExit = since(mark, 'exit', 'llm')[0]!;
    expect(since(mark, 'exit', 'comfy-gpu')[0]!.at).toBeLessThanOrEqual(llmSpawn.at);
    const stats = await fakeStats(fake.url);
    expect(stats.outcomes[held]).toEqual(['interrupted']);
    // No prompt ran in ComfyUI while the LLM process lived.
    for (const r of stats.runs) {
      expect(r.endedAt, `prompt ${r.promptId} never ended`).not.toBeNull();
      expect(
        r.endedAt! <= llmSpawn.at || r.startedAt >= llmExit.at,
        `prompt ${r.promptId} ran ${r.startedAt}-${r.endedAt}, LLM up ${llmSpawn.at}-${llmExit.at}`,
      ).toBe(true);
    }
    expectRenderedOnce(stats, { prompts: 2 });
  }, 240_000);

  it('ttl never unloads the GPU entry while a render is pending; once idle it unloads (ComfyUI freed), and new work brings it back by itself', async () => {
    await resetFake(fake.url);
    await setFaults(fake.url, { hold: HOLD });
    const mark = ls.events.length;
    const started = await post('/upstream/imagegen-flux-dev/v1/videos', VIDEO);
    expect(started.status).toBeLessThan(300);
    await waitHeld();
    // The stand-in's ttl sweep sees the entry idle (no request ended) for longer than ttl, but busy: the lease.
    await ls.waitFor(
      (e) => e.type === 'ttl-check' && e.model === 'comfy-gpu' && Number(e.detail?.idleMs) > TTL_S * 1000 + 1000 && Number(e.detail?.inFlight) > 0,
      mark,
    );
    expect(since(mark, 'stop', 'comfy-gpu')).toHaveLength(0);
    const freesBefore = (await fakeStats(fake.url)).unloadModelsRequests;
    await fetch(`${fake.url}/__fake/release`, { method: 'POST' });
    // Done, lease released, idle past ttl: unloaded, and ComfyUI asked to unload its models.
    await ls.waitFor((e) => e.type === 'exit' && e.model === 'comfy-gpu', mark);
    expect((await fakeStats(fake.url)).unloadModelsRequests).toBeGreaterThan(freesBefore);
    expect(await videoStatus(started.json.id)).toBe('completed');
    expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });

    // New async work with the GPU entry stopped: no poll, yet it renders.
    await resetFake(fake.url);
    const again = ls.events.length;
    const second = await post('/upstream/imagegen-flux-dev/v1/videos', { ...VIDEO, seed: 4 });
    expect(second.status).toBeLessThan(300);
    await ls.waitFor((e) => e.type === 'ready' && e.model === 'comfy-gpu', again);
    await waitFor('the second video to render', async () => (await fakeStats(fake.url)).runs.some((r) => r.endedAt !== null), 180_000, 200);
    await ls.waitFor((e) => e.type === 'exit' && e.model === 'comfy-gpu', again);
    expect(await videoStatus(second.json.id)).toBe('completed');
    expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
  }, 300_000);

  it("renders waiting in the GPU entry run the loaded model's first (one model load per model, not one per change)", async () => {
    await resetFake(fake.url);
    await setFaults(fake.url, { hold: HOLD, modelLoad: { coldMs: 0, warmMs: 0 } });
    const before = (ls.output('comfy-gpu').match(/waits in this worker for a ComfyUI/g) ?? []).length;
    const first = post('/sdapi/v1/txt2img', { ...IMAGE, seed: 21 });
    await waitHeld();
    // Arriving in turns while the first is held: qwen, schnell, qwen, schnell.
    const next = [22, 23, 24, 25].map((seed, i) => post('/sdapi/v1/txt2img', { ...IMAGE, seed, model: i % 2 === 0 ? 'imagegen-qwen-image' : IMAGE.model }));
    await waitFor(
      'the four renders waiting in the GPU entry',
      async () => (ls.output('comfy-gpu').match(/waits in this worker for a ComfyUI/g) ?? []).length - before >= 4,
      180_000,
      200,
    );
    await fetch(`${fake.url}/__fake/release`, { method: 'POST' });
    for (const r of await Promise.all([first, ...next])) expect(r.status, JSON.stringify(r.json).slice(0, 300)).toBe(200);
    const stats = await fakeStats(fake.url);
    // First in, first out loads a model per change (GPU_MAX_PASS_OVER_MS=0 gave [false, true, false]).
    expect(stats.modelLoads.map((l) => l.files.some((f) => /qwen/i.test(f)))).toEqual([false, true]);
    // Each of the five prompts submitted once and run once.
    expect(Object.values(stats.submissions)).toEqual([1, 1, 1, 1, 1]);
    expect(Object.values(stats.outcomes)).toEqual(Array.from({ length: 5 }, () => ['success']));
  }, 240_000);

  it('a render request refused with a 400 takes no lease: the LLM stays loaded and the GPU entry is not started', async () => {
    const chat = { model: 'llm', messages: [{ role: 'user', content: 'hi' }] };
    expect((await post('/v1/chat/completions', chat)).status).toBe(200);
    const mark = ls.events.length;
    const bad = await post('/sdapi/v1/txt2img', { ...IMAGE, sampler_name: 'no such sampler' });
    expect(bad.status, JSON.stringify(bad.json).slice(0, 300)).toBe(400);
    expect((await post('/v1/chat/completions', chat)).status).toBe(200);
    expect(since(mark, 'spawn', 'comfy-gpu')).toHaveLength(0);
    expect(since(mark, 'stop', 'llm')).toHaveLength(0);
  }, 120_000);

  it("llama-swap's process-group SIGTERM drains the front: Temporal outlives the worker, the waiting client gets its image, exit 0", async () => {
    await resetFake(fake.url);
    await setFaults(fake.url, { hold: HOLD });
    const mark = ls.events.length;
    const render = post('/sdapi/v1/txt2img', { ...IMAGE, seed: 12 });
    await waitHeld();
    // The manual unload is a SIGTERM to the front's whole process group, and does not wait for its requests.
    const unloading = fetch(`${ls.url}/api/models/unload/imagegen-flux-dev`, { method: 'POST' });
    await ls.waitFor((e) => e.type === 'stop' && e.model === 'imagegen-flux-dev', mark);
    await fetch(`${fake.url}/__fake/release`, { method: 'POST' });
    const done = await render;
    expect(done.status, JSON.stringify(done.json).slice(0, 300)).toBe(200);
    await unloading;
    const exit = await ls.waitFor((e) => e.type === 'exit' && e.model === 'imagegen-flux-dev', mark);
    expect(exit.detail).toMatchObject({ code: 0 });
    expect(ls.output('imagegen-flux-dev')).not.toMatch(/drain.*fail|Shutdown grace time expired/i);
    // The embedded Temporal was stopped by the front, last: no server left on the database.
    expect(existsSync(path.join(dataDir, 'temporal.db.server.pid'))).toBe(false);
    expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
  }, 240_000);
});
