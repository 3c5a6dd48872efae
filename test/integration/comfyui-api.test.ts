/**
 * ComfyUI's own API through the real stack (Temporal dev server + fake ComfyUI + comfy-durable as a child
 * process, with API_TOKEN): a client written like ComfyUI's WebSocket example works unchanged; what ComfyUI
 * refuses is refused in its own 400 with nothing started; uploads render on the GPU that runs the prompt; a
 * prompt id resubmitted attaches to its render; /queue and /interrupt; the live-backend passthroughs.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { fakeStats, resetFake, setFaults, waitFor } from '../faults/helpers.ts';
import { runLikeComfyExample } from '../support/comfy-ws-client.ts';
import { renderIdFor } from '../../src/api/comfyui/history.ts';
import { makePng, pngSize } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const golden = (name: string): Record<string, any> => JSON.parse(readFileSync(path.join(root, 'test', 'golden', `${name}.json`), 'utf8'));
const TOKEN = 'comfy-secret';
const auth = { authorization: `Bearer ${TOKEN}` };

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

/** The schnell txt2img golden graph at a small size and a few steps, with a prefix of the client's own. */
function txt2img(seed: number, steps = 2): Record<string, any> {
  const g = golden('imagegen-flux-schnell-txt2img');
  g.latent.inputs.width = 64;
  g.latent.inputs.height = 64;
  g.sampler.inputs.seed = seed;
  g.sampler.inputs.steps = steps;
  g.save.inputs.filename_prefix = 'ComfyUI';
  return g;
}

async function post(route: string, body: unknown, headers: Record<string, string> = auth): Promise<{ status: number; json: any }> {
  const res = await fetch(`${svc.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}
const get = async (route: string): Promise<any> => (await fetch(`${svc.url}${route}`, { headers: auth })).json();

async function promptRenders(): Promise<number> {
  let n = 0;
  for await (const _ of client.workflow.list({ query: `TaskQueue = '${svc.taskQueue}' AND RenderKind = 'prompt'` })) n++;
  return n;
}

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')), stepMs: 20 });
  // A short headers timeout: the WebSocket must outlive it (an upgraded socket is not an idle connection).
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { API_TOKEN: TOKEN, HTTP_HEADERS_TIMEOUT_MS: '1000' } });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 180_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

describe("ComfyUI's own API (real stack)", () => {
  it("a client written like ComfyUI's WebSocket example works unchanged: events until executing null, then /history and /view", async () => {
    // 150 steps of 20 ms: the socket stays open past the front's 1 s headers timeout.
    const run = await runLikeComfyExample(svc.url, txt2img(7, 150), auth);
    const types = run.messages.map((m) => m.type);
    expect(types[0]).toBe('status');
    expect(types).toEqual(expect.arrayContaining(['execution_start', 'execution_cached', 'executed', 'execution_success']));
    expect(types.indexOf('execution_start')).toBeLessThan(types.indexOf('execution_success'));
    const executed = run.messages.find((m) => m.type === 'executed')!;
    expect(executed.data).toMatchObject({ node: 'save', prompt_id: run.promptId });
    const item = run.history[run.promptId];
    expect(item.status).toMatchObject({ status_str: 'success', completed: true });
    expect(item.prompt[1]).toBe(run.promptId);
    // The graph as the client sent it (its own prefix), not as run.
    expect(item.prompt[2].save.inputs.filename_prefix).toBe('ComfyUI');
    expect(item.outputs.save.images[0]).toMatchObject({ subfolder: '', type: 'output' });
    expect(pngSize(run.images.save![0]!.toString('base64'))).toMatchObject({ width: 64, height: 64 });
    // The render is an ordinary one: listed by the operators' route with its kind, and replayable (same graph).
    const renderId = renderIdFor(run.promptId);
    expect(JSON.stringify(await get('/renders?kind=prompt'))).toContain(renderId);
    const replay = await post(`/renders/${renderId}/replay`, {});
    expect(replay.status, JSON.stringify(replay.json)).toBe(202);
    const replayed = await client.workflow.getHandle(replay.json.renderId as string).result();
    expect(replayed.request.graph.graph).toEqual(item.prompt[2]);
    expect(replayed.outputs).toHaveLength(1);
  }, 120_000);

  it("what ComfyUI refuses gets ComfyUI's own 400, and nothing is started", async () => {
    const before = await promptRenders();
    const unknown = txt2img(1);
    unknown.sampler.class_type = 'NoSuchSampler';
    const a = await post('/prompt', { prompt: unknown });
    expect(a.status).toBe(400);
    expect(a.json.error).toMatchObject({ type: 'missing_node_type', extra_info: { node_id: 'sampler', class_type: 'NoSuchSampler' } });
    expect(a.json.node_errors).toEqual({});
    const b = await post('/api/prompt', { client_id: 'x' });
    expect(b.json).toEqual({ error: { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} }, node_errors: {} });
    const c = await post('/prompt', { prompt: txt2img(1), prompt_id: 'abc' });
    expect([c.status, c.json.error.type]).toEqual([400, 'invalid_prompt_id']);
    const missing = txt2img(1);
    delete missing.sampler.inputs.steps;
    const d = await post('/prompt', { prompt: missing });
    expect(d.status).toBe(400);
    expect(d.json.node_errors.sampler.errors[0]).toMatchObject({ type: 'required_input_missing', extra_info: { input_name: 'steps' } });
    const noOutputs = txt2img(1);
    delete noOutputs.save;
    expect((await post('/prompt', { prompt: noOutputs })).json.error.type).toBe('prompt_no_outputs');
    // Without the token: refused like every route.
    expect((await post('/prompt', { prompt: txt2img(1) }, {})).status).toBe(401);
    expect(await promptRenders()).toBe(before);
  }, 60_000);

  it('an uploaded image renders through LoadImage; the same prompt_id again attaches to its render (rendered once)', async () => {
    await resetFake(fake.url);
    const form = new FormData();
    form.append('image', new Blob([makePng(64, 64, () => [200, 30, 30, 255])], { type: 'image/png' }), 'in.png');
    form.append('overwrite', 'true');
    const up = await fetch(`${svc.url}/api/upload/image`, { method: 'POST', headers: auth, body: form });
    const uploaded = (await up.json()) as { name: string; subfolder: string; type: string };
    expect(up.status).toBe(200);
    expect(uploaded).toMatchObject({ subfolder: '', type: 'input' });
    expect(uploaded.name).toMatch(/^[0-9a-f]{64}\.png$/);

    const g = golden('imagegen-flux-schnell-img2img');
    const load = Object.values(g).find((n: { class_type: string }) => n.class_type === 'LoadImage');
    load.inputs.image = uploaded.name;
    const promptId = '0b7f6c1e-8d52-4f0a-9e1c-2a3b4c5d6e7f';
    const first = await post('/prompt', { prompt: g, prompt_id: promptId });
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(first.json).toMatchObject({ prompt_id: promptId, node_errors: {} });
    const again = await post('/prompt', { prompt: g, prompt_id: promptId });
    expect(again.json.prompt_id).toBe(promptId);
    const item = await waitFor('the history of the img2img prompt', async () => (await get(`/history/${promptId}`))[promptId], 60_000, 200);
    expect(item.status.status_str).toBe('success');
    // As run, the graph named the content-addressed upload the attempt made on its ComfyUI.
    const stats = await fakeStats(fake.url);
    expect(Object.keys(stats.submissions)).toHaveLength(1);
    // The same prompt id with another graph is refused in ComfyUI's shape.
    const other = await post('/prompt', { prompt: txt2img(3), prompt_id: promptId });
    expect([other.status, other.json.error.type]).toEqual([400, 'duplicate_prompt_id']);
    // A mask upload: the original with the mask's alpha.
    const mask = new FormData();
    mask.append('image', new Blob([makePng(64, 64, () => [0, 0, 0, 128])], { type: 'image/png' }), 'mask.png');
    mask.append('original_ref', JSON.stringify({ filename: uploaded.name, subfolder: '', type: 'input' }));
    const masked = await fetch(`${svc.url}/upload/mask`, { method: 'POST', headers: auth, body: mask });
    expect(masked.status).toBe(200);
    expect(((await masked.json()) as { name: string }).name).not.toBe(uploaded.name);
  }, 90_000);

  it('/queue shows a running prompt; /interrupt stops it and its history says interrupted', async () => {
    await resetFake(fake.url);
    await setFaults(fake.url, { hold: [{ nodeClass: 'VAEDecode' }] });
    const started = await post('/prompt', { prompt: txt2img(11), client_id: 'queue-test' });
    expect(started.status).toBe(200);
    const id = started.json.prompt_id as string;
    await waitFor('the prompt on a GPU', async () => (await get('/queue')).queue_running.some((q: unknown[]) => q[1] === id), 60_000, 200);
    expect((await get('/prompt')).exec_info.queue_remaining).toBe(1);
    expect((await post('/interrupt', { prompt_id: id })).status).toBe(200);
    const item = await waitFor('the interrupted prompt in history', async () => (await get(`/history/${id}`))[id], 60_000, 200);
    expect(item.status.status_str).toBe('error');
    expect(item.status.messages.at(-1)[0]).toBe('execution_interrupted');
    await setFaults(fake.url, { hold: [] });
  }, 120_000);

  it('/object_info, /models, /system_stats, /features and /embeddings come from the live backend, with and without /api', async () => {
    const info = await get('/object_info');
    expect(Object.keys(info).length).toBeGreaterThan(100);
    expect(Object.keys(await get('/api/object_info/KSampler'))).toEqual(['KSampler']);
    expect(await get('/system_stats')).toHaveProperty('system');
    expect(Array.isArray(await get('/models'))).toBe(true);
    expect(await get('/api/features')).toBeTypeOf('object');
    expect(await get('/embeddings')).toEqual([]);
    const all = (await get('/history')) as Record<string, any>;
    expect(Object.keys(all).length).toBeGreaterThanOrEqual(2);
  }, 30_000);
});

describe('workflow files as typed endpoints (real stack)', () => {
  it('appear in /openapi.json with their parameters', async () => {
    const doc = (await (await fetch(`${svc.url}/openapi.json`)).json()) as any;
    const lora = doc.paths['/workflows/lora-stack'].post;
    const props = lora.requestBody.content['application/json'].schema.properties;
    expect(props.lora_1_clip_strength).toMatchObject({ type: 'number', minimum: -5, maximum: 5, default: 1 });
    expect(doc.paths['/workflows/regional-prompt'].post.requestBody.content['application/json'].schema.properties.left_prompt.type).toBe('string');
    expect(doc.paths['/workflows/regional-prompt/renders/{id}']).toBeDefined();
  });

  it('a LoRA stack with per-LoRA CLIP strength renders synchronously; the graph as run carries each strength', async () => {
    const body = { prompt: 'a fox', seed: 5, steps: 2, width: 64, height: 64, lora_1_clip_strength: 0.3, lora_2_model_strength: 0.9, lora_2_clip_strength: 0 };
    const res = await post('/workflows/lora-stack', body);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json).toMatchObject({ status: 'completed', outputs: [{ node: 'save', mime: 'image/png', width: 64, height: 64 }] });
    const png = await fetch(`${svc.url}${res.json.outputs[0].url}`, { headers: auth });
    expect(pngSize(Buffer.from(await png.arrayBuffer()).toString('base64'))).toMatchObject({ width: 64, height: 64 });
    const result = await client.workflow.getHandle(res.json.render_id).result();
    const g = result.request.graph.graph;
    expect([g.lora1.inputs.strength_model, g.lora1.inputs.strength_clip]).toEqual([0.8, 0.3]);
    expect([g.lora2.inputs.strength_model, g.lora2.inputs.strength_clip]).toEqual([0.9, 0]);
    // ComfyUI's API sees it too: its prompt id has a history.
    expect((await get(`/history/${res.json.prompt_id}`))[res.json.prompt_id].status.status_str).toBe('success');
    // An Idempotency-Key retry attaches to the same render.
    const keyed = await post('/workflows/lora-stack', body, { ...auth, 'idempotency-key': 'lora-1' });
    const retried = await post('/workflows/lora-stack', body, { ...auth, 'idempotency-key': 'lora-1' });
    expect(retried.json.render_id).toBe(keyed.json.render_id);
    expect(retried.json.prompt_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  }, 120_000);

  it('regional prompting runs asynchronously: 202, then the status route; bad parameters are refused naming the field', async () => {
    const started = await post('/workflows/regional-prompt?async=true', {
      prompt: 'a meadow',
      left_prompt: 'a fox',
      right_prompt: 'an owl',
      region_strength: 2,
      steps: 2,
      width: 128,
      height: 64,
    });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    expect(started.json.status).toBe('queued');
    const done = await waitFor(
      'the regional render to complete',
      async () => {
        const s = await get(started.json.status_url);
        return s.status === 'completed' ? s : undefined;
      },
      60_000,
      200,
    );
    expect(done.outputs[0]).toMatchObject({ node: 'save', width: 128, height: 64 });
    const g = (await client.workflow.getHandle(started.json.render_id).result()).request.graph.graph;
    expect([g.left_text.inputs.text, g.right_text.inputs.text, g.left_area.inputs.strength, g.right_area.inputs.strength]).toEqual(['a fox', 'an owl', 2, 2]);

    const bad = await post('/workflows/regional-prompt', { prompt: 'x', left_prompt: 'a', right_prompt: 'b', region_strength: 11 });
    expect([bad.status, bad.json.field]).toEqual([422, 'region_strength']);
    const unknown = await post('/workflows/lora-stack', { prompt: 'x', lora_3: 'y' });
    expect(unknown.status).toBe(400);
    expect((await post('/workflows/lora-stack', { prompt: 'x' }, {})).status).toBe(401);
  }, 120_000);
});
