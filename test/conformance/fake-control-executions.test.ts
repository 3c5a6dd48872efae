/**
 * The fake ComfyUI against the ControlNet / Redux / background-removal executions recorded on a real ComfyUI
 * 0.33.0 with tiny weights (test/fixtures/real-comfyui/execution-controlnet-*.json, tools/tiny-models/): the
 * same graphs, in the recorded order from an empty cache, give the same WebSocket transcript (ComfyUI's node
 * order, what is cached from the previous prompt, progress_state around every node, the sampler's steps) and
 * the same output shape; and, as on the real server, a unit changes the sampler's output. SAM3 text segmentation
 * (execution-controlnet-sam3-text.json) is replayed on a fake of its own.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderPng } from '../../tools/fake-comfyui/png.ts';
import type { FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startFakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { Frame } from './capture-client.ts';
import { CaptureHttp, CaptureWs, donePred } from './capture-client.ts';
import { frameLine } from './compare.ts';

interface Recording {
  graph: Record<string, { class_type: string; inputs: Record<string, unknown> }>;
  ws_messages: Array<{ type: string; data: unknown }>;
  history: { outputs: Record<string, { images: Array<{ filename: string; subfolder: string; type: string }> }> };
}

/** In the order they ran on the real server (each one's cache is what the previous ones left). */
const RUNS = ['flux-dev-baseline', 'flux-dev-controlnet-union-canny', 'flux-dev-controlnet-plain-none', 'flux-dev-redux', 'rembg-birefnet'];
/** The Flux runs: same seed, prompt and size; only the unit differs from the baseline. */
const FLUX_UNITS = RUNS.slice(1, 4);
const recording = (name: string): Recording =>
  JSON.parse(readFileSync(new URL(`../fixtures/real-comfyui/execution-controlnet-${name}.json`, import.meta.url), 'utf8')) as Recording;

let fake: FakeComfyUI;
let ws: CaptureWs;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0, stepMs: 0, logLevel: 'silent', profileFiles: false });
  ws = new CaptureWs(fake.url, 'control-client', false);
  await ws.open();
  await ws.waitFor((f) => f.kind === 'text' && f.type === 'status');
});

afterAll(async () => {
  await ws?.close();
  await fake?.close();
});

async function run(graph: unknown): Promise<{ frames: Frame[]; promptId: string }> {
  const m = ws.mark();
  const res = await fetch(`${fake.url}/prompt`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: graph, client_id: ws.clientId }),
  });
  const body = (await res.json()) as { prompt_id: string; node_errors: unknown };
  expect(res.status, JSON.stringify(body)).toBe(200);
  expect(body.node_errors).toEqual({});
  await ws.waitFor(donePred(body.prompt_id), m);
  await ws.barrier();
  return { frames: ws.since(m), promptId: body.prompt_id };
}

async function outputPixels(promptId: string): Promise<Buffer> {
  const history = (await (await fetch(`${fake.url}/history/${promptId}`)).json()) as Record<string, Recording['history']>;
  const image = history[promptId]!.outputs.save!.images[0]!;
  const q = new URLSearchParams({ filename: image.filename, subfolder: image.subfolder, type: image.type });
  return PNG.sync.read(Buffer.from(await (await fetch(`${fake.url}/view?${q.toString()}`)).arrayBuffer())).data;
}

/** Background removal: the mask and the cut-out saved as recorded; the cut-out is an RGBA PNG, as SaveImage writes a 4-channel image. */
async function expectRgbaCutout(promptId: string, rec: Recording): Promise<void> {
  const history = (await (await fetch(`${fake.url}/history/${promptId}`)).json()) as Record<string, Recording['history']>;
  const outputs = history[promptId]!.outputs;
  expect(Object.keys(outputs).sort()).toEqual(Object.keys(rec.history.outputs).sort());
  const cutout = outputs.save_cutout!.images[0]!;
  const q = new URLSearchParams({ filename: cutout.filename, subfolder: cutout.subfolder, type: cutout.type });
  const png = Buffer.from(await (await fetch(`${fake.url}/view?${q.toString()}`)).arrayBuffer());
  expect(png[25], 'PNG colour type (6 = RGBA)').toBe(6);
}

describe('ControlNet and Redux executions, as recorded on the real server', () => {
  it('sends the recorded transcripts in order, and every unit changes the output', async () => {
    // The control image every graph loads (its content does not matter to the transcript).
    writeFileSync(path.join(fake.dataDir, 'input', 'control-source.png'), renderPng({ width: 256, height: 256, contentKey: 'control-source' }));
    // Steps >= 100 ms apart, as on the real CPU run, so the progress throttle lets every step through.
    await fetch(`${fake.url}/__fake/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slow: { stepMs: 120 } }),
    });
    const pixels = new Map<string, Buffer>();
    try {
      for (const name of RUNS) {
        const rec = recording(name);
        const { frames, promptId } = await run(rec.graph);
        const recorded = rec.ws_messages.slice(1).map((m): Frame => ({ t: 0, kind: 'text', type: m.type, data: m.data }));
        // While the background-removal run was executing, other prompts were queued and deleted on the same
        // server (scripts/record-golden-verdicts.ts): its transcript holds their queue-size broadcasts.
        const ownFrames = (fs: Frame[]) => (name === 'rembg-birefnet' ? fs.filter((f) => f.type !== 'status') : fs);
        expect({ name, lines: ownFrames(frames).map(frameLine) }).toEqual({ name, lines: ownFrames(recorded).map(frameLine) });
        const executed = (fs: Frame[]) => (fs.find((f) => f.type === 'executed')?.data as { output: Record<string, unknown> }).output;
        expect(Object.keys(executed(frames))).toEqual(Object.keys(executed(recorded)));
        if (name.startsWith('flux-dev-')) pixels.set(name, await outputPixels(promptId));
        else await expectRgbaCutout(promptId, rec);
      }
    } finally {
      await fetch(`${fake.url}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ slow: null }) });
    }
    const baseline = pixels.get('flux-dev-baseline')!;
    for (const name of FLUX_UNITS) expect(pixels.get(name)!.equals(baseline), `${name} output equals the baseline's`).toBe(false);
    await new CaptureHttp(fake.url).drain();
  });

  it("runs the service's own golden graph (canny ControlNet + image prompt) as the real server did, from an empty cache", async () => {
    const rec = recording('golden-flux-dev-canny-ip-adapter');
    for (const node of Object.values(rec.graph)) {
      if (node.class_type !== 'LoadImage') continue;
      const full = path.join(fake.dataDir, 'input', node.inputs.image as string);
      mkdirSync(path.dirname(full), { recursive: true });
      writeFileSync(full, renderPng({ width: 64, height: 64, contentKey: full }));
    }
    await fetch(`${fake.url}/free`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ free_memory: true }) });
    await new CaptureHttp(fake.url).drain();
    // 20 steps, the real ones seconds apart: every step passes the progress throttle.
    await fetch(`${fake.url}/__fake/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slow: { stepMs: 120 } }),
    });
    try {
      const { frames } = await run(rec.graph);
      const recorded = rec.ws_messages.slice(1).map((m): Frame => ({ t: 0, kind: 'text', type: m.type, data: m.data }));
      expect(frames.map(frameLine)).toEqual(recorded.map(frameLine));
    } finally {
      await fetch(`${fake.url}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ slow: null }) });
    }
  });

  it('runs SAM3 text segmentation (and ImageInvert) as the real server did: transcript, outputs, RGB mask and images, an RGBA cut-out', async () => {
    const rec = recording('sam3-text');
    // Its own fake: the real server's cache held none of this graph (a Flux render of the service ran before it),
    // and the SAM3 checkpoint is listed as a ComfyUI with src/models/segmentation.ts's files lists it.
    const own = await startFakeComfyUI({ port: 0, stepMs: 0, logLevel: 'silent' });
    const capture = new CaptureWs(own.url, 'sam3-client', false);
    try {
      await capture.open();
      await capture.waitFor((f) => f.kind === 'text' && f.type === 'status');
      writeFileSync(path.join(own.dataDir, 'input', 'control-source.png'), renderPng({ width: 256, height: 256, contentKey: 'control-source' }));
      const m = capture.mark();
      const res = await fetch(`${own.url}/prompt`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: rec.graph, client_id: capture.clientId }),
      });
      const { prompt_id: promptId } = (await res.json()) as { prompt_id: string };
      await capture.waitFor(donePred(promptId), m);
      await capture.barrier();
      // The real run's queue broadcasts include the service's prompts queued meanwhile: compared without them.
      const own_ = (fs: Frame[]) => fs.filter((f) => f.type !== 'status').map(frameLine);
      const recorded = rec.ws_messages.slice(1).map((f): Frame => ({ t: 0, kind: 'text', type: f.type, data: f.data }));
      expect(own_(capture.since(m))).toEqual(own_(recorded));
      const history = (await (await fetch(`${own.url}/history/${promptId}`)).json()) as Record<string, Recording['history']>;
      const outputs = history[promptId]!.outputs;
      expect(Object.keys(outputs).sort()).toEqual(Object.keys(rec.history.outputs).sort());
      const png = async (node: string) => {
        const image = outputs[node]!.images[0]!;
        const q = new URLSearchParams({ filename: image.filename, subfolder: image.subfolder, type: image.type });
        return Buffer.from(await (await fetch(`${own.url}/view?${q.toString()}`)).arrayBuffer());
      };
      // PNG colour types as the real files: RGB (2) for mask, blended and inverted image, RGBA (6) for the cut-out; 256x256 each.
      for (const [node, colourType] of [
        ['save_mask', 2],
        ['save_blended', 2],
        ['save_invert', 2],
        ['save_cutout', 6],
      ] as const) {
        const file = await png(node);
        expect({ node, size: [file.readUInt32BE(16), file.readUInt32BE(20)], colourType: file[25] }).toEqual({ node, size: [256, 256], colourType });
      }
    } finally {
      await capture.close();
      await own.close();
    }
  });
});
