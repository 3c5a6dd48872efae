/**
 * The fake ComfyUI over real HTTP and WebSocket: submission rules, event order and addressing, history
 * shape, caching and the rendered files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { readImageHeader, readTextChunks } from '../../tools/fake-comfyui/png.ts';
import { startFakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { fluxGgufGraph, httpClient, sdGraph, WsRecorder } from '../../tools/fake-comfyui/testing.ts';
import type { WsEvent } from '../../tools/fake-comfyui/testing.ts';

let fake: FakeComfyUI;
let http: ReturnType<typeof httpClient>;
const sockets: WsRecorder[] = [];

async function ws(clientId?: string): Promise<WsRecorder> {
  const r = await WsRecorder.connect(fake.url, clientId);
  sockets.push(r);
  return r;
}

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0, logLevel: process.env.LOG_LEVEL ?? 'silent' });
  http = httpClient(fake.url);
});

afterAll(async () => {
  for (const s of sockets) await s.close();
  await fake.close();
});

beforeEach(async () => {
  await http.post('/__fake/reset');
});

const pixels = (file: string) => PNG.sync.read(readFileSync(file)).data;
const outFile = (ref: { filename: string; subfolder: string }) => path.join(fake.dataDir, 'output', ref.subfolder, ref.filename);

type History = {
  prompt: [number, string, Record<string, unknown>, Record<string, unknown>, string[]];
  outputs: Record<string, { images: Array<{ filename: string; subfolder: string; type: string }> }>;
  status: { status_str: string; completed: boolean; messages: Array<[string, Record<string, unknown>]> };
  meta: Record<string, unknown>;
};

describe('POST /prompt', () => {
  it('queues a valid graph with a client-chosen canonical UUID and answers {prompt_id, number, node_errors}', async () => {
    const id = '0b6f8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
    const r = await http.post('/prompt', { prompt: sdGraph(), prompt_id: id });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ prompt_id: id, number: 0, node_errors: {} });
    await http.waitForHistory(id);
  });

  it('mints a uuid4 when prompt_id is omitted or null; honours number and front', async () => {
    const a = await http.submit(sdGraph(), { prompt_id: null });
    expect(a.prompt_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.number).toBe(0);
    expect((await http.submit(sdGraph(), { number: 7.5 })).number).toBe(7.5);
    expect((await http.submit(sdGraph(), { front: true })).number).toBe(-1);
    expect((await http.submit(sdGraph())).number).toBe(2);
  });

  it('rejects a non-canonical prompt_id with the exact invalid_prompt_id body', async () => {
    for (const bad of ['0B6F8F4E-1C2D-4E5F-8A9B-0C1D2E3F4A5B', '0b6f8f4e1c2d4e5f8a9b0c1d2e3f4a5b', 'job-1', 42]) {
      const r = await http.post('/prompt', { prompt: sdGraph(), prompt_id: bad });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({
        error: {
          type: 'invalid_prompt_id',
          message: 'prompt_id must be a valid UUID',
          details: 'prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one',
          extra_info: {},
        },
        node_errors: {},
      });
    }
  });

  it('no_prompt, validation errors (400), and a non-JSON body (500)', async () => {
    const none = await http.post('/prompt', { client_id: 'x' });
    expect(none.status).toBe(400);
    expect(none.json).toEqual({ error: { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} }, node_errors: {} });

    const g = sdGraph();
    g['3']!.inputs.sampler_name = 'not-a-sampler';
    const bad = await http.post<{ error: { type: string }; node_errors: Record<string, { class_type: string }> }>('/prompt', { prompt: g });
    expect(bad.status).toBe(400);
    expect(bad.json.error.type).toBe('prompt_outputs_failed_validation');
    expect(bad.json.node_errors['3']!.class_type).toBe('KSampler');

    const junk = await http.post('/prompt', '{"prompt": ');
    expect(junk.status).toBe(500);
  });

  it('answers 200 with partial node_errors when some outputs validate, and runs only those', async () => {
    const g = sdGraph({ prefix: 'partial' });
    g['12'] = { class_type: 'SaveImage', inputs: { images: ['8', 0] }, _meta: { title: 'no prefix' } };
    const r = await http.post<{ prompt_id: string; node_errors: Record<string, { errors: Array<{ type: string }>; dependent_outputs: string[] }> }>('/prompt', {
      prompt: g,
    });
    expect(r.status).toBe(200);
    expect(r.json.node_errors['12']!.errors[0]!.type).toBe('required_input_missing');
    expect(r.json.node_errors['12']!.dependent_outputs).toEqual(['12']);
    const h = await http.waitForHistory<History>(r.json.prompt_id);
    expect(h.prompt[4]).toEqual(['9']);
    expect(Object.keys(h.outputs)).toEqual(['9']);
  });

  it('LoadImage of a file that is not in input/ fails validation with custom_validation_failed', async () => {
    const g = sdGraph();
    g['10'] = { class_type: 'LoadImage', inputs: { image: 'missing.png' }, _meta: { title: 'Load' } };
    g['11'] = { class_type: 'VAEEncode', inputs: { pixels: ['10', 0], vae: ['4', 2] }, _meta: { title: 'enc' } };
    g['3']!.inputs.latent_image = ['11', 0];
    const r = await http.post<{ node_errors: Record<string, { errors: Array<{ type: string; details: string }> }> }>('/prompt', { prompt: g });
    expect(r.status).toBe(400);
    expect(r.json.node_errors['10']!.errors[0]).toMatchObject({ type: 'custom_validation_failed', details: 'image - Invalid image file: missing.png' });
  });

  it('routes work with and without /api; jobs only under /api/jobs', async () => {
    expect((await http.get('/api/queue')).json).toEqual({ queue_running: [], queue_pending: [] });
    expect((await http.get('/prompt')).json).toEqual({ exec_info: { queue_remaining: 0 } });
    expect((await http.get('/api/prompt')).json).toEqual({ exec_info: { queue_remaining: 0 } });
    expect((await http.get('/jobs')).status).toBe(404);
    expect((await http.get('/api/jobs')).status).toBe(200);
    const ok = await http.post<{ prompt_id: string }>('/api/prompt', { prompt: sdGraph() });
    expect(ok.status).toBe(200);
    await http.waitForHistory(ok.json.prompt_id);
  });
});

describe('execution events', () => {
  it('sends the real sequence to the owning socket; executing:null comes after history is written', async () => {
    const rec = await ws();
    const start = rec.events.length;
    const { prompt_id } = await http.submit(sdGraph({ steps: 3, prefix: 'events' }), { client_id: rec.sid });
    await rec.waitForDone(prompt_id);
    // The guarantee clients rely on: by executing:null the history is there.
    const hist = (await http.get<Record<string, History>>(`/history/${prompt_id}`)).json;
    expect(hist[prompt_id]).toBeDefined();

    const evs = rec.events.slice(start);
    const types = evs.map((e) => e.type);
    const idx = (pred: (e: WsEvent) => boolean) => evs.findIndex(pred);
    const iStart = idx((e) => e.type === 'execution_start');
    const iCached = idx((e) => e.type === 'execution_cached');
    const iFirstExec = idx((e) => e.type === 'executing');
    const iFirstState = idx((e) => e.type === 'progress_state');
    const iExecuted = idx((e) => e.type === 'executed');
    const iSuccess = idx((e) => e.type === 'execution_success');
    const iNull = idx((e) => e.type === 'executing' && e.data.node === null);
    expect(types[0]).toBe('status');
    expect(iStart).toBeGreaterThan(0);
    expect(iCached).toBe(iStart + 1);
    // As recorded: a node's `progress_state` (running) comes right before its `executing`.
    expect(iFirstState).toBe(iCached + 1);
    expect(iFirstExec).toBe(iFirstState + 1);
    expect(iExecuted).toBeGreaterThan(iFirstExec);
    expect(iSuccess).toBeGreaterThan(iExecuted);
    // History is written (status broadcast with the queue drained) before executing:null.
    expect(evs.slice(iSuccess + 1, iNull).map((e) => e.type)).toEqual(['status']);
    expect(evs[iSuccess + 1]!.data).toEqual({ status: { exec_info: { queue_remaining: 0 } } });
    expect(iNull).toBe(evs.length - 1);

    expect(evs[iStart]!.data).toEqual({ prompt_id, timestamp: expect.any(Number) });
    expect(evs[iCached]!.data).toEqual({ nodes: [], prompt_id, timestamp: expect.any(Number) });
    const executing = evs.filter((e) => e.type === 'executing' && e.data.node !== null).map((e) => e.data.node);
    expect([...executing].sort()).toEqual(['3', '4', '5', '6', '7', '8', '9']);
    expect(executing.indexOf('3')).toBeLessThan(executing.indexOf('8'));
    const progress = evs.filter((e) => e.type === 'progress').map((e) => e.data);
    // Throttled like comfy.utils.ProgressBar: steps under 100 ms apart send only the first and the last.
    expect(progress).toEqual([1, 3].map((value) => ({ value, max: 3, prompt_id, node: '3' })));
    // progress_state precedes each progress tick and reports the running node.
    const iFirstProgress = idx((e) => e.type === 'progress');
    expect(evs[iFirstProgress - 1]!.type).toBe('progress_state');
    expect((evs[iFirstProgress - 1]!.data.nodes as Record<string, { state: string; value: number; max: number }>)['3']).toMatchObject({
      state: 'running',
      value: 1,
      max: 3,
    });
    expect(evs[iExecuted]!.data).toEqual({
      node: '9',
      display_node: '9',
      output: { images: [{ filename: 'events_00001_.png', subfolder: '', type: 'output' }] },
      prompt_id,
    });
    expect(evs[iNull]!.data).toEqual({ node: null, prompt_id });
  });

  it('stores history in the ComfyUI shape', async () => {
    const rec = await ws();
    const g = sdGraph({ prefix: 'hist/shape' });
    const { prompt_id, number } = await http.submit(g, { client_id: rec.sid, extra_data: { extra_pnginfo: { workflow: { id: 'wf-1' } } } });
    const h = await http.waitForHistory<History>(prompt_id);
    expect(h.prompt).toEqual([
      number,
      prompt_id,
      g,
      { extra_pnginfo: { workflow: { id: 'wf-1' } }, client_id: rec.sid, create_time: expect.any(Number) },
      ['9'],
    ]);
    expect(h.outputs).toEqual({ '9': { images: [{ filename: 'shape_00001_.png', subfolder: 'hist', type: 'output' }] } });
    expect(h.status.status_str).toBe('success');
    expect(h.status.completed).toBe(true);
    expect(h.status.messages.map((m) => m[0])).toEqual(['execution_start', 'execution_cached', 'execution_success']);
    for (const [, data] of h.status.messages) expect(data).toMatchObject({ prompt_id, timestamp: expect.any(Number) });
    expect(h.meta).toEqual({ '9': { node_id: '9', display_node: '9', parent_node: null, real_node_id: '9' } });
    // Unknown ids (and queued/running ones) read as {}.
    expect((await http.get('/history/00000000-0000-4000-8000-000000000000')).json).toEqual({});
    const all = (await http.get<Record<string, unknown>>('/history?max_items=1')).json;
    expect(Object.keys(all)).toEqual([prompt_id]);
    expect((await http.post('/history', { delete: [prompt_id] })).status).toBe(200);
    expect((await http.get(`/history/${prompt_id}`)).json).toEqual({});
    const other = await http.submit(sdGraph({ seed: 99 }));
    await http.waitForHistory(other.prompt_id);
    await http.post('/history', { clear: true });
    expect((await http.get('/history')).json).toEqual({});
  });

  it('addresses prompt events only to the owning socket; without client_id only progress is broadcast', async () => {
    const owner = await ws();
    const other = await ws();
    const otherStart = other.events.length;
    const { prompt_id } = await http.submit(sdGraph({ steps: 2, seed: 1 }), { client_id: owner.sid });
    await owner.waitForDone(prompt_id);
    const seenByOther = other.events.slice(otherStart);
    expect(seenByOther.some((e) => e.data.prompt_id === prompt_id)).toBe(false);
    expect(seenByOther.some((e) => e.type === 'status')).toBe(true);

    const anonStart = other.events.length;
    const anon = await http.submit(sdGraph({ steps: 2, seed: 2 }));
    await http.waitForHistory(anon.prompt_id);
    await other.waitFor(
      (e) => e.type === 'status' && (e.data.status as { exec_info: { queue_remaining: number } }).exec_info.queue_remaining === 0,
      2000,
      anonStart,
    );
    const types = new Set(
      other.events
        .slice(anonStart)
        .filter((e) => e.data.prompt_id === anon.prompt_id)
        .map((e) => e.type),
    );
    expect([...types].sort()).toEqual(['progress', 'progress_state']);
  });

  it('answers the feature_flags handshake on the first message', async () => {
    const rec = await ws();
    rec.send({ type: 'feature_flags', data: { supports_preview_metadata: true } });
    const ev = await rec.waitFor((e) => e.type === 'feature_flags');
    expect(ev.data).toMatchObject({ supports_preview_metadata: true, max_upload_size: 104857600 });
    expect((await http.get('/features')).json).toEqual(ev.data);
  });

  it('serves /api/ws too', async () => {
    const rec = await WsRecorder.connect(fake.url, 'api-client', '/api/ws');
    sockets.push(rec);
    expect(rec.sid).toBe('api-client');
  });
});

describe('caching and rendered files', () => {
  it('an identical resubmit is served from cache: execution_cached, same file, nothing re-rendered', async () => {
    const rec = await ws();
    const first = await http.submit(sdGraph({ prefix: 'cache', seed: 11 }), { client_id: rec.sid });
    await rec.waitForDone(first.prompt_id);
    const second = await http.submit(sdGraph({ prefix: 'cache', seed: 11 }), { client_id: rec.sid });
    await rec.waitForDone(second.prompt_id);

    const cached = rec.forPrompt(second.prompt_id).find((e) => e.type === 'execution_cached')!;
    expect((cached.data.nodes as string[]).slice().sort()).toEqual(['3', '4', '5', '6', '7', '8', '9']);
    expect(rec.forPrompt(second.prompt_id).filter((e) => e.type === 'executing' && e.data.node !== null)).toEqual([]);
    const executed = rec.forPrompt(second.prompt_id).find((e) => e.type === 'executed')!;
    expect(executed.data.output).toEqual({ images: [{ filename: 'cache_00001_.png', subfolder: '', type: 'output' }] });
    const h = await http.waitForHistory<History>(second.prompt_id);
    expect(h.outputs['9']!.images[0]!.filename).toBe('cache_00001_.png');
    expect(h.status.status_str).toBe('success');
    expect(readdirSync(path.join(fake.dataDir, 'output')).filter((f) => f.startsWith('cache_'))).toEqual(['cache_00001_.png']);

    const stats = (await http.get<{ executions: Record<string, number>; nodesExecuted: Record<string, number> }>('/__fake/stats')).json;
    expect(stats.executions[second.prompt_id]).toBe(1);
    expect(stats.nodesExecuted[first.prompt_id]).toBe(7);
    expect(stats.nodesExecuted[second.prompt_id]).toBeUndefined();
  });

  it('a new filename_prefix re-runs only the save node: new file, identical pixels, different metadata', async () => {
    const rec = await ws();
    const a = await http.submit(sdGraph({ prefix: 'job-a', seed: 5 }), { client_id: rec.sid });
    await rec.waitForDone(a.prompt_id);
    const b = await http.submit(sdGraph({ prefix: 'job-b', seed: 5 }), { client_id: rec.sid });
    await rec.waitForDone(b.prompt_id);
    const executing = rec.forPrompt(b.prompt_id).filter((e) => e.type === 'executing' && e.data.node !== null);
    expect(executing.map((e) => e.data.node)).toEqual(['9']);
    const ha = await http.waitForHistory<History>(a.prompt_id);
    const hb = await http.waitForHistory<History>(b.prompt_id);
    const fa = outFile(ha.outputs['9']!.images[0]!);
    const fb = outFile(hb.outputs['9']!.images[0]!);
    expect(path.basename(fb)).toBe('job-b_00001_.png');
    expect(Buffer.compare(pixels(fa), pixels(fb))).toBe(0);
    expect(readFileSync(fa).equals(readFileSync(fb))).toBe(false);
    // The PNG embeds the prompt like SaveImage does (and the extra_pnginfo keys when given).
    expect(JSON.parse(readTextChunks(readFileSync(fb)).prompt!)).toEqual(sdGraph({ prefix: 'job-b', seed: 5 }));
  });

  it('same seed → identical pixels across renders; different seed → different pixels', async () => {
    const r1 = await http.submit(sdGraph({ prefix: 's1', seed: 100 }));
    await http.post('/free', { free_memory: true });
    const r2 = await http.submit(sdGraph({ prefix: 's2', seed: 100 }));
    const r3 = await http.submit(sdGraph({ prefix: 's3', seed: 101 }));
    const files = await Promise.all([r1, r2, r3].map(async (r) => outFile((await http.waitForHistory<History>(r.prompt_id)).outputs['9']!.images[0]!)));
    const [p1, p2, p3] = files.map(pixels);
    expect(Buffer.compare(p1!, p2!)).toBe(0);
    expect(Buffer.compare(p1!, p3!)).not.toBe(0);
  });

  it('POST /free {free_memory:true} drops the cache', async () => {
    const a = await http.submit(sdGraph({ prefix: 'free', seed: 3 }));
    await http.waitForHistory(a.prompt_id);
    await http.post('/free', { free_memory: true });
    const b = await http.submit(sdGraph({ prefix: 'free', seed: 3 }));
    const hb = await http.waitForHistory<History>(b.prompt_id);
    expect(hb.outputs['9']!.images[0]!.filename).toBe('free_00002_.png');
    const stats = (await http.get<{ nodesExecuted: Record<string, number>; freeMemory: number }>('/__fake/stats')).json;
    expect(stats.nodesExecuted[b.prompt_id]).toBe(7);
    expect(stats.freeMemory).toBe(1);
  });

  it('reports the model files its loaders hold until POST /free {unload_models:true} (what GPU sharing checks)', async () => {
    const a = await http.submit(sdGraph({ prefix: 'loaded', seed: 21 }));
    await http.waitForHistory(a.prompt_id);
    const loaded = async (): Promise<string[]> => (await http.get<{ loadedModels: string[] }>('/__fake/stats')).json.loadedModels;
    const before = await loaded();
    expect(before.length).toBeGreaterThan(0);
    expect(before.every((f) => /\.(safetensors|ckpt|sft|gguf|pt|pth|bin)$/.test(f))).toBe(true);
    await http.post('/free', { unload_models: true });
    await vi.waitFor(async () => expect(await loaded()).toEqual([]), { timeout: 10_000, interval: 20 });
  });

  it('image size follows the latent; batch_size gives that many files; V3 latent nodes too', async () => {
    const sd = await http.submit(sdGraph({ prefix: 'size/sd', width: 96, height: 40, batchSize: 2, seed: 9 }));
    const hs = await http.waitForHistory<History>(sd.prompt_id);
    expect(hs.outputs['9']!.images.map((i) => i.filename)).toEqual(['sd_00001_.png', 'sd_00002_.png']);
    for (const img of hs.outputs['9']!.images) expect(readImageHeader(readFileSync(outFile(img)))).toMatchObject({ width: 96, height: 40 });
    const [b0, b1] = hs.outputs['9']!.images.map((i) => pixels(outFile(i)));
    expect(Buffer.compare(b0!, b1!)).not.toBe(0);

    const flux = await http.submit(fluxGgufGraph({ prefix: 'size/flux', width: 80, height: 48 }));
    const hf = await http.waitForHistory<History>(flux.prompt_id);
    expect(readImageHeader(readFileSync(outFile(hf.outputs['10']!.images[0]!)))).toMatchObject({ format: 'png', width: 80, height: 48 });
  });

  it('renders 1024x1024 quickly', async () => {
    const t0 = Date.now();
    const r = await http.submit(sdGraph({ prefix: 'big', width: 1024, height: 1024, seed: 77 }));
    const h = await http.waitForHistory<History>(r.prompt_id, 10_000);
    expect(readImageHeader(readFileSync(outFile(h.outputs['9']!.images[0]!)))).toMatchObject({ width: 1024, height: 1024 });
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('refuses a filename_prefix escaping the output dir with an execution_error', async () => {
    const rec = await ws();
    const { prompt_id } = await http.submit(sdGraph({ prefix: '../../escape' }), { client_id: rec.sid });
    const err = await rec.waitFor((e) => e.type === 'execution_error' && e.data.prompt_id === prompt_id);
    expect(err.data).toMatchObject({ node_id: '9', node_type: 'SaveImage', exception_type: 'Exception' });
    expect(String(err.data.exception_message)).toContain('Saving image outside the output folder is not allowed');
    const h = await http.waitForHistory<History>(prompt_id);
    expect(h.status).toMatchObject({ status_str: 'error', completed: false });
  });

  it('PreviewImage writes to temp/ with type temp', async () => {
    const g = sdGraph({ seed: 12 });
    g['9'] = { class_type: 'PreviewImage', inputs: { images: ['8', 0] }, _meta: { title: 'Preview' } };
    const { prompt_id } = await http.submit(g);
    const h = await http.waitForHistory<History>(prompt_id);
    const img = h.outputs['9']!.images[0]!;
    expect(img).toMatchObject({ subfolder: '', type: 'temp' });
    expect(img.filename).toMatch(/^ComfyUI_temp_[a-z]{5}_00001_\.png$/);
    const view = await fetch(`${fake.url}/view?filename=${img.filename}&type=temp`);
    expect(view.status).toBe(200);
  });

  it('SaveVideo writes an .mp4 reported under images with animated [true] (media checked in fake-comfyui-video.test.ts)', async () => {
    const g = sdGraph({ seed: 13 });
    g['9'] = { class_type: 'CreateVideo', inputs: { images: ['8', 0], fps: 24 }, _meta: { title: 'Create Video' } };
    g['10'] = {
      class_type: 'SaveVideo',
      inputs: { video: ['9', 0], filename_prefix: 'video/ComfyUI', format: 'auto', 'format.codec': 'auto' },
      _meta: { title: 'Save Video' },
    };
    const { prompt_id } = await http.submit(g);
    const h = await http.waitForHistory<{ outputs: Record<string, unknown> }>(prompt_id);
    expect(h.outputs['10']).toEqual({ images: [{ filename: 'ComfyUI_00001_.mp4', subfolder: 'video', type: 'output' }], animated: [true] });
    const res = await fetch(`${fake.url}/view?filename=ComfyUI_00001_.mp4&subfolder=video&type=output`);
    expect(res.headers.get('content-type')).toBe('video/mp4');

    // As on the real server: a missing DynamicCombo (`format`) is dropped by validation, not refused, and
    // the node fails at execution.
    delete g['10'].inputs.format;
    delete g['10'].inputs['format.codec'];
    const noCodec = await http.submit(g);
    const h2 = await http.waitForHistory<History>(noCodec.prompt_id);
    expect(h2.status.messages.find((m) => m[0] === 'execution_error')![1]).toMatchObject({ node_type: 'SaveVideo', exception_type: 'KeyError' });
  });
});
