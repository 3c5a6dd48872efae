/**
 * Conformance of whole executions and verdicts, against recordings of the real ComfyUI 0.33.0
 * (test/fixtures/real-comfyui):
 * - golden-real.json: the real server accepted every golden graph (`node_errors: {}`); the fake's own
 *   validation must give the same verdict;
 * - verdicts-model-files.json: graphs with missing model files / node classes, answered identically;
 * - execution-wan22-t2v.json, execution-h3-fl2va.json, execution-flux-schnell-txt2img.json: full WebSocket
 *   transcripts (ComfyUI's node order, not the graph's; progress_state before executing; samplers keeping
 *   their last value/max; lazy switches; SaveVideo's ui shape);
 * - execution-sd15-preview-flags.json: a sampler with `preview_method` and `supports_preview_metadata`: one
 *   type-4 preview (JSON metadata + JPEG) per step between `progress_state` and `progress`; and, from the
 *   same source, type-1 JPEG frames after `progress` for a client without the flag.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderPng } from '../../tools/fake-comfyui/png.ts';
import type { FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startFakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { Frame } from './capture-client.ts';
import { CaptureHttp, CaptureWs, donePred } from './capture-client.ts';
import { compareCaptures, frameLine } from './compare.ts';
import type { Capture } from './replay.ts';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/real-comfyui/${name}`, import.meta.url), 'utf8'));
const GOLDEN_DIR = new URL('../golden/', import.meta.url);

let fake: FakeComfyUI;
const sockets: CaptureWs[] = [];

beforeAll(async () => {
  // Compared with a real server's answers, which list exactly the recorded model files.
  fake = await startFakeComfyUI({ port: 0, stepMs: 0, logLevel: 'silent', profileFiles: false });
});

afterAll(async () => {
  for (const s of sockets) await s.close();
  await fake?.close();
});

async function socket(clientId: string, flags: boolean): Promise<CaptureWs> {
  const ws = new CaptureWs(fake.url, clientId, flags);
  await ws.open();
  sockets.push(ws);
  await ws.waitFor((f) => f.kind === 'text' && f.type === (flags ? 'feature_flags' : 'status'));
  return ws;
}

async function post(body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${fake.url}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** Runs `graph` for `ws`'s client and returns the frames from the POST to `executing {node: null}`. */
async function run(ws: CaptureWs, graph: unknown, extraData: Record<string, unknown> = {}): Promise<Frame[]> {
  const m = ws.mark();
  const r = await post({ prompt: graph, client_id: ws.clientId, extra_data: extraData });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  await ws.waitFor(donePred(r.json.prompt_id as string), m);
  await ws.barrier();
  return ws.since(m);
}

describe('verdicts on the golden graphs', () => {
  const recorded = fixture('golden-real.json') as Record<string, { status: number; response: { node_errors: unknown } }>;

  it('accepts every golden graph exactly as the real server did', async () => {
    // golden-real.json holds the real server's verdicts on every golden graph. The video ones are left out
    // here only because accepted graphs run, and the video goldens at their default sizes would make this
    // test encode minutes of video; their verdicts are held against the client's check in preflight-verdicts.
    const files = readdirSync(GOLDEN_DIR).filter((f) => f.endsWith('.json') && !f.startsWith('videogen-'));
    expect(files.sort()).toEqual(
      Object.keys(recorded)
        .filter((f) => !f.startsWith('videogen-'))
        .sort(),
    );
    for (const file of files) {
      const graph = JSON.parse(readFileSync(new URL(file, GOLDEN_DIR), 'utf8')) as Record<string, { class_type: string; inputs: Record<string, unknown> }>;
      // The images the golden graphs load were uploaded before the real server saw them.
      for (const node of Object.values(graph)) {
        if (!['LoadImage', 'LoadImageMask'].includes(node.class_type) || typeof node.inputs.image !== 'string') continue;
        const full = path.join(fake.dataDir, 'input', node.inputs.image);
        mkdirSync(path.dirname(full), { recursive: true });
        writeFileSync(full, renderPng({ width: 64, height: 64, contentKey: node.inputs.image }));
      }
      const r = await post({ prompt: graph });
      const real = recorded[file] as { status: number; response: { node_errors: unknown } };
      expect({ file, status: r.status, node_errors: r.json.node_errors }).toEqual({ file, status: real.status, node_errors: real.response.node_errors });
    }
    // They run (and broadcast: no client id); let them finish before the transcripts below.
    await new CaptureHttp(fake.url).drain(60_000);
  });
});

describe('verdicts on graphs with missing model files or node classes', () => {
  it('answers each recorded POST /prompt of verdicts-model-files.json exactly as the real server did', async () => {
    const recorded = fixture('verdicts-model-files.json') as { steps: Array<{ name: string; request_json: unknown }> };
    // A ComfyUI checkout ships input/example.png, which these graphs load.
    writeFileSync(path.join(fake.dataDir, 'input', 'example.png'), renderPng({ width: 64, height: 64, contentKey: 'example' }));
    const http = new CaptureHttp(fake.url);
    for (const step of recorded.steps) await http.req(step.name, 'POST', '/prompt', { json: step.request_json });
    const real: Capture = {
      base: '',
      run: 'no-run-tag',
      steps: recorded.steps.map((s) => ({ ...s, content_type: 'application/json; charset=utf-8', headers: {} })),
    };
    const mine: Capture = { base: fake.url, run: 'no-run-tag', steps: http.steps.map((s) => ({ ...s, headers: {} })) };
    expect(compareCaptures(real, mine, [])).toEqual([]);
    await http.drain(60_000);
  });
});

describe('a Wan 2.2 text-to-video execution', () => {
  it('sends the recorded transcript: node order, progress_state around each node, SaveVideo ui', async () => {
    const rec = fixture('execution-wan22-t2v.json') as { graph: unknown; ws_messages: Array<{ type: string; data: unknown }> };
    const ws = await socket('wan-client', false);
    const frames = await run(ws, rec.graph);
    const recorded = rec.ws_messages.slice(1).map((m): Frame => ({ t: 0, kind: 'text', type: m.type, data: m.data }));
    expect(frames.map(frameLine)).toEqual(recorded.map(frameLine));
    const lastState = (fs: Frame[]) =>
      (fs.filter((f) => f.type === 'progress_state').at(-1)?.data as { nodes: Record<string, { value: number; max: number }> }).nodes;
    const { value, max, state } = lastState(recorded)['3'] as { value: number; max: number; state: string };
    expect(lastState(frames)['3']).toMatchObject({ value, max, state });
    const executed = (fs: Frame[]) => (fs.find((f) => f.type === 'executed')?.data as { output: Record<string, unknown> }).output;
    expect(Object.keys(executed(frames))).toEqual(Object.keys(executed(recorded)));
    expect(executed(frames).animated).toEqual([true]);
  });
});

describe('a MiniMax H3 first/last-frame to video execution', () => {
  it('sends the recorded transcript: flattened subgraph ids, lazy switches run twice, untaken branch never runs', async () => {
    const rec = fixture('execution-h3-fl2va.json') as {
      graph: Record<string, { class_type: string; inputs: Record<string, unknown> }>;
      ws_messages: Array<{ type: string; data: unknown }>;
    };
    for (const node of Object.values(rec.graph)) {
      if (node.class_type !== 'LoadImage' || typeof node.inputs.image !== 'string') continue;
      writeFileSync(path.join(fake.dataDir, 'input', node.inputs.image), renderPng({ width: 64, height: 64, contentKey: node.inputs.image }));
    }
    const ws = await socket('h3-client', false);
    const frames = await run(ws, rec.graph);
    // The real sampler ran at ~130 it/s, so the throttle let step 15 through too; at 0 ms per step the fake
    // sends only the first and the last. Everything else must be the same.
    const isMidStep = (f: Frame) => (f.type === 'progress' || f.type === 'progress_state') && JSON.stringify(f.data).includes('"value":15,');
    const recorded = rec.ws_messages
      .slice(1)
      .map((m): Frame => ({ t: 0, kind: 'text', type: m.type, data: m.data }))
      .filter((f) => !isMidStep(f));
    expect(frames.map(frameLine)).toEqual(recorded.map(frameLine));
  });
});

/** The recording's own summary: `type node` / `progress_state node:stateV/M,...` / `BINARY n`. */
const summary = (type: string | undefined, data: Record<string, unknown> | undefined, binary?: number): string => {
  if (binary !== undefined) return `BINARY ${binary}`;
  if (type === 'progress_state')
    return `progress_state ${Object.entries(data ?? {})
      .map(([k, v]) => `${k}:${String(v).replaceAll('.0', '')}`)
      .join(',')}`;
  return `${type} ${type === 'executing' ? String(data?.node) : ''}`;
};
const fakeSummary = (f: Frame): string => {
  if (f.kind === 'binary') return `BINARY ${f.event_type}`;
  const d = f.data as Record<string, unknown>;
  if (f.type === 'progress_state') {
    const nodes = d.nodes as Record<string, { state: string; value: number; max: number }>;
    return summary('progress_state', Object.fromEntries(Object.entries(nodes).map(([k, v]) => [k, `${v.state}${v.value}/${v.max}`])));
  }
  return summary(String(f.type), d);
};

describe('the flux-schnell golden graph, executed', () => {
  it('sends the recorded transcript (tiny random-weight models on the real server)', async () => {
    const rec = fixture('execution-flux-schnell-txt2img.json') as {
      frames: Array<{ type?: string; data?: Record<string, unknown> }>;
      history: { prompt: [number, string, unknown] };
    };
    const ws = await socket('flux-client', false);
    // The golden-verdict test above ran this very graph: start from an empty cache, as the recording did.
    await fetch(`${fake.url}/free`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ free_memory: true }) });
    await new CaptureHttp(fake.url).drain();
    // Steps >= 100 ms apart, as on the real CPU run, so the throttle lets every step through.
    await fetch(`${fake.url}/__fake/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slow: { stepMs: 120 } }),
    });
    try {
      const frames = await run(ws, rec.history.prompt[2]);
      expect(frames.map(fakeSummary)).toEqual(rec.frames.slice(1).map((f) => summary(f.type, f.data)));
    } finally {
      await fetch(`${fake.url}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ slow: null }) });
    }
  });
});

describe('preview frames', () => {
  const rec = fixture('execution-sd15-preview-flags.json') as {
    frames: Array<{ type?: string; binary?: number; data?: Record<string, unknown>; meta?: Record<string, unknown>; img_head?: string }>;
    history: { prompt: [number, string, Record<string, { inputs: Record<string, unknown> }>, Record<string, unknown>] };
  };
  const graph = rec.history.prompt[2];
  const extra = { preview_method: rec.history.prompt[3].preview_method };
  it('type 4 with metadata, one per step, for a client with supports_preview_metadata', async () => {
    const ws = await socket('preview-meta', true);
    // The recorded run found the loaders, encoders and latent cached from an earlier run with another seed.
    await run(ws, { ...graph, sampler: { ...graph.sampler, inputs: { ...graph.sampler!.inputs, seed: 4 } } }, extra);
    const m = ws.mark();
    const frames = await run(ws, graph, extra);
    const expected = rec.frames.slice(2).map((f) => summary(f.type, f.data, f.binary));
    expect(frames.map(fakeSummary)).toEqual(expected);
    const binaries = ws.frames.slice(m).filter((f) => f.kind === 'binary');
    expect(binaries).toHaveLength(4);
    for (const b of binaries) expect(b.head_hex?.slice(0, 8)).toBe('00000004');
    expect(ws.frames.length).toBeGreaterThan(m);
  });

  it('the metadata and the JPEG of a type-4 frame are what the recording shows', async () => {
    const { WebSocket } = await import('ws');
    const raw: Buffer[] = [];
    const ws = new WebSocket(`${fake.url.replace('http', 'ws')}/ws?clientId=preview-raw`);
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'feature_flags', data: { supports_preview_metadata: true } }));
    ws.on('message', (data, isBinary) => isBinary && raw.push(data as Buffer));
    const r = await post({
      prompt: { ...graph, sampler: { ...graph.sampler, inputs: { ...graph.sampler!.inputs, seed: 5 } } },
      client_id: 'preview-raw',
      extra_data: extra,
    });
    for (let i = 0; raw.length < 4 && i < 2000; i++) await new Promise((res) => setTimeout(res, 10));
    ws.close();
    const frame = raw[0] as Buffer;
    const n = frame.readUInt32BE(4);
    const meta = JSON.parse(frame.subarray(8, 8 + n).toString('utf8')) as Record<string, unknown>;
    const recordedMeta = rec.frames.find((f) => f.binary === 4)?.meta as Record<string, unknown>;
    expect(Object.keys(meta)).toEqual(Object.keys(recordedMeta));
    expect(meta).toMatchObject({
      node_id: 'sampler',
      display_node_id: 'sampler',
      parent_node_id: null,
      real_node_id: 'sampler',
      image_type: 'image/jpeg',
      prompt_id: r.json.prompt_id,
    });
    const img = frame.subarray(8 + n);
    expect(img.subarray(0, 4).toString('hex')).toBe(rec.frames.find((f) => f.binary === 4)?.img_head);
    const decoded = jpeg.decode(img, { useTArray: true });
    expect([decoded.width, decoded.height]).toEqual([32, 32]);
  });

  it('type 1 (JPEG) after each progress for a client without feature flags', async () => {
    const ws = await socket('preview-legacy', false);
    const frames = await run(ws, { ...graph, sampler: { ...graph.sampler, inputs: { ...graph.sampler!.inputs, seed: 6 } } }, extra);
    const samplerState = (f: Frame) => (f.data as { nodes: Record<string, { state: string; value: number; max: number }> }).nodes.sampler;
    const lines = frames
      .map((f) => (f.type === 'progress_state' ? `sampler:${samplerState(f)?.state}${samplerState(f)?.value}/${samplerState(f)?.max}` : fakeSummary(f)))
      .filter((l) => l === 'BINARY 1' || l.startsWith('progress ') || l.startsWith('sampler:running'));
    expect(lines).toEqual(['sampler:running0/1', ...[1, 2, 3, 4].flatMap((i) => [`sampler:running${i}/4`, 'progress ', 'BINARY 1'])]);
    for (const b of frames.filter((f) => f.kind === 'binary')) expect(b.head_hex?.slice(0, 16)).toBe('00000001' + '00000001');
  });
});
