/**
 * ComfyUI's own API through the real stack (Temporal dev server + fake ComfyUI + comfy-durable as a child
 * process, with API_TOKEN): a client written like ComfyUI's WebSocket example works unchanged; what ComfyUI
 * refuses is refused in its own 400 with nothing started; uploads render on the GPU that runs the prompt; a
 * prompt id resubmitted attaches to its render; /queue and /interrupt; the live-backend passthroughs. With
 * named client keys (API_KEYS beside API_TOKEN, the operator) each key is its own ComfyUI; `extra_data.webhook`
 * gets a signed `prompt.completed` the standardwebhooks library verifies.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import WebSocket from 'ws';
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
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789abc';
const alice = { authorization: `Bearer ${ALICE}` };
const bob = { authorization: `Bearer ${BOB}` };
const WEBHOOK_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const hooks: { headers: http.IncomingHttpHeaders; body: string }[] = [];
let receiver: http.Server;
let receiverUrl: string;

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
const get = async (route: string, headers: Record<string, string> = auth): Promise<any> => (await fetch(`${svc.url}${route}`, { headers })).json();

async function promptRenders(): Promise<number> {
  let n = 0;
  for await (const _ of client.workflow.list({ query: `TaskQueue = '${svc.taskQueue}' AND RenderKind = 'prompt'` })) n++;
  return n;
}

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hooks.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')), stepMs: 20 });
  // A short headers timeout: the WebSocket must outlive it (an upgraded socket is not an idle connection).
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    env: {
      API_TOKEN: TOKEN,
      API_KEYS: JSON.stringify([
        { name: 'alice', token: ALICE, role: 'client' },
        { name: 'bob', token: BOB, role: 'client' },
      ]),
      HTTP_HEADERS_TIMEOUT_MS: '1000',
      WEBHOOK_SECRET,
      // Loopback is internal: the receiver's address has to be listed.
      WEBHOOK_ALLOWED_TARGETS: '127.0.0.1',
    },
  });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 180_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

/** A socket on `/ws?clientId=` with `headers`; every text message it hears. */
async function listen(clientId: string, headers: Record<string, string>): Promise<{ ws: WebSocket; heard: { type: string; data: any }[]; frames: Buffer[] }> {
  const ws = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/ws?clientId=${clientId}`, { headers });
  const heard: { type: string; data: any }[] = [];
  const frames: Buffer[] = [];
  ws.on('message', (data, isBinary) => {
    if (isBinary) frames.push(data as Buffer);
    else heard.push(JSON.parse((data as Buffer).toString('utf8')));
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, heard, frames };
}

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
    // API_TOKEN is the operator key named `default`: its prompt ids name renders scoped by that name.
    const renderId = renderIdFor(run.promptId, 'default');
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

describe("ComfyUI's API with named client keys (real stack)", () => {
  it("each key is its own ComfyUI: another key's client id, prompt id, history, queue and interrupt reach nothing of yours", async () => {
    await resetFake(fake.url);
    await setFaults(fake.url, { hold: [{ nodeClass: 'VAEDecode' }] });
    const clientId = 'shared-client-id';
    const [mine, theirs] = await Promise.all([listen(clientId, alice), listen(clientId, bob)]);
    try {
      const promptId = '4d2c7a10-1b2c-4d3e-8f40-5a6b7c8d9e0f';
      const started = await post('/prompt', { prompt: txt2img(21), prompt_id: promptId, client_id: clientId }, alice);
      expect(started.status, JSON.stringify(started.json)).toBe(200);
      await waitFor(
        'alice sees her prompt on a GPU',
        async () => (await get('/queue', alice)).queue_running.some((q: unknown[]) => q[1] === promptId),
        60_000,
        200,
      );
      // Bob's queue is empty and his interrupt (without a prompt id: "every running one") stops nothing of Alice's.
      expect(await get('/queue', bob)).toEqual({ queue_running: [], queue_pending: [] });
      expect((await get('/prompt', bob)).exec_info.queue_remaining).toBe(0);
      expect((await post('/interrupt', {}, bob)).status).toBe(200);
      expect((await post('/queue', { clear: true }, bob)).status).toBe(200);
      // The operator sees it in the shared queue.
      expect((await get('/queue')).queue_running.some((q: unknown[]) => q[1] === promptId)).toBe(true);
      // The sampler's previews reach Alice's socket while the render is held at the decode.
      await waitFor("a preview frame on Alice's socket", async () => mine.frames[0], 30_000, 50);
      // The held VAE decode goes on once it is reached (the fake's release, as a long node finishing).
      const release = async (): Promise<boolean> =>
        ((await (await fetch(`${fake.url}/__fake/release`, { method: 'POST' })).json()) as { released: boolean }).released;
      await waitFor('the held VAE decode released', async () => (await release()) || undefined, 60_000, 50);
      const item = await waitFor('alice reads her history', async () => (await get(`/history/${promptId}`, alice))[promptId], 60_000, 200);
      expect(item.status.status_str).toBe('success');
      // Bob: the same prompt id names nothing of his; his history list does not hold it.
      expect(await get(`/history/${promptId}`, bob)).toEqual({});
      expect(Object.keys(await get('/history', bob))).not.toContain(promptId);
      expect(Object.keys(await get('/history', alice))).toContain(promptId);
      // The operator's list holds every key's prompts.
      expect(Object.keys(await get('/history'))).toContain(promptId);
      // The sampler's previews reached Alice's socket as ComfyUI's binary PREVIEW_IMAGE frames (u32 1, u32 1 = JPEG).
      expect(mine.frames.length).toBeGreaterThan(0);
      expect([mine.frames[0]!.readUInt32BE(0), mine.frames[0]!.readUInt32BE(4), mine.frames[0]!.subarray(8, 10).toString('hex')]).toEqual([1, 1, 'ffd8']);
      expect(theirs.frames).toEqual([]);
      // Alice's socket heard her prompt to its end; Bob's, on the same client id, only the queue's status.
      await waitFor('alice hears executing null', async () => mine.heard.some((m) => m.type === 'executing' && m.data.node === null), 30_000, 50);
      expect(mine.heard.map((m) => m.type)).toContain('execution_success');
      expect(theirs.heard.length).toBeGreaterThan(0);
      expect(theirs.heard.filter((m) => m.type !== 'status')).toEqual([]);
      expect(JSON.stringify(theirs.heard)).not.toContain(promptId);
      // Bob may use the same prompt id for a graph of his own: another render, not a duplicate.
      const his = await post('/prompt', { prompt: txt2img(22), prompt_id: promptId }, bob);
      expect(his.status, JSON.stringify(his.json)).toBe(200);
      await waitFor('bob reads his own history', async () => (await get(`/history/${promptId}`, bob))[promptId], 60_000, 200);
      expect(renderIdFor(promptId, 'bob')).not.toBe(renderIdFor(promptId, 'alice'));
      // A workflow file's status route: Alice's render is not found for Bob.
      const wf = await post('/workflows/lora-stack?async=true', { prompt: 'a fox', steps: 2, width: 64, height: 64 }, alice);
      expect(wf.status, JSON.stringify(wf.json)).toBe(202);
      const forBob = await fetch(`${svc.url}${wf.json.status_url}`, { headers: bob });
      expect([forBob.status, await forBob.json()]).toEqual([404, { detail: 'Not Found' }]);
      expect((await fetch(`${svc.url}${wf.json.status_url}`, { headers: alice })).status).toBe(200);
    } finally {
      await setFaults(fake.url, { hold: [] });
      mine.ws.close();
      theirs.ws.close();
    }
  }, 180_000);

  it('a socket with no key, or a wrong one, is refused', async () => {
    await expect(listen('x', {})).rejects.toThrow(/401/);
    await expect(listen('x', { authorization: 'Bearer not-a-key-at-all' })).rejects.toThrow(/401/);
    const viaQuery = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/ws?clientId=y&token=${ALICE}`);
    await new Promise<void>((resolve, reject) => {
      viaQuery.once('open', () => resolve());
      viaQuery.once('error', reject);
    });
    viaQuery.close();
  });

  it("extra_data.webhook gets a signed prompt.completed naming the prompt; a URL the allow-list refuses is ComfyUI's 400, nothing started", async () => {
    const before = await promptRenders();
    const refused = await post('/prompt', { prompt: txt2img(31), extra_data: { webhook: 'http://10.1.2.3/hook' } }, alice);
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toMatch(/^extra_data\.webhook: /);
    expect(await promptRenders()).toBe(before);

    const sent = await post('/prompt', { prompt: txt2img(32), extra_data: { webhook: receiverUrl } }, alice);
    expect(sent.status, JSON.stringify(sent.json)).toBe(200);
    const promptId = sent.json.prompt_id as string;
    const hook = await waitFor('the prompt webhook', async () => hooks.find((h) => h.body.includes(promptId)), 60_000, 100);
    const event = new Webhook(WEBHOOK_SECRET).verify(hook.body, {
      'webhook-id': String(hook.headers['webhook-id']),
      'webhook-timestamp': String(hook.headers['webhook-timestamp']),
      'webhook-signature': String(hook.headers['webhook-signature']),
    }) as { type: string; data: Record<string, unknown> };
    expect(event.type).toBe('prompt.completed');
    expect(event.data).toMatchObject({ prompt_id: promptId });
  }, 120_000);
});
