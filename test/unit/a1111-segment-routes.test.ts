/**
 * stable-diffusion-webui-rembg's `POST /rembg` and sd-webui-segment-anything's `POST /sam/sam-predict`
 * (src/api/a1111/segment-routes.ts): the bodies as the extensions take them, `segment` renders whose graphs the
 * recorded /object_info accepts and the fake ComfyUI runs, answers in the extensions' shapes, the returned mask
 * taken as an img2img inpaint mask, and refusals (422 naming the client's field, nothing started or stored).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestFront, type TestFront } from '../support/front.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { objectInfoSchema, type ObjectInfo } from '../../src/comfyui/object-info.ts';
import { preflightGraph } from '../../src/comfyui/preflight.ts';
import { planRender } from '../../src/models/plan.ts';
import { SEGMENTATION_FILES } from '../../src/models/segmentation.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { loadRawObjectInfo, withProfileFiles } from '../../tools/fake-comfyui/fixture.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { httpClient } from '../../tools/fake-comfyui/testing.ts';
import { ctx, makePng, makePngWith, pngB64 } from '../golden/helpers.ts';
import { schemaProblems } from '../golden/schema-check.ts';

/** The recorded /object_info with the segmentation files installed (as the fake serves it). */
const installed: ObjectInfo = objectInfoSchema.parse(withProfileFiles(loadRawObjectInfo()));
/** The recorded /object_info as a ComfyUI 0.33.0 without any background-removal or SAM3 file (the recording has BiRefNet). */
const bare: ObjectInfo = (() => {
  const raw = loadRawObjectInfo() as Record<string, { input: { required: Record<string, unknown[]> } }>;
  raw.LoadBackgroundRemovalModel!.input.required.bg_removal_name![1] = { options: [] };
  return objectInfoSchema.parse(raw);
})();

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});

/** A front over a ComfyUI whose /object_info is `info`; its renders answer one PNG per item, item i in shade i. */
async function front(info: ObjectInfo = installed): Promise<TestFront> {
  const f = await startTestFront({}, { objectInfo: async () => info });
  fronts.push(f);
  const blobs = new FsBlobStore(f.blobDir);
  f.outcome = async (started) => {
    const request = f.starts.at(-1)!.request;
    const outputs = [];
    for (let i = 0; i < request.batchSize; i++) outputs.push(await blobs.put(makePng(8, 8, [i * 100, 0, 0, 255]), { mime: 'image/png', width: 8, height: 8 }));
    return { renderId: started.renderId, outputs, seeds: [0], request, backend: 'comfyui-0', promptIds: [], timings: [] } satisfies RenderResult;
  };
  return f;
}

const post = (f: TestFront, url: string, body: unknown) =>
  f.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
const shade = (i: number) => makePng(8, 8, [i * 100, 0, 0, 255]).toString('base64');
const classesOf = (graph: Record<string, { class_type: string }>) => Object.values(graph).map((n) => n.class_type);

function blobFiles(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true }).map(String);
  } catch {
    return [];
  }
}

describe('POST /rembg', () => {
  it('the cut-out by default, the mask with return_mask: one RemoveBackground graph the recorded /object_info accepts', async () => {
    const f = await front();
    const res = await post(f, '/rembg', { input_image: pngB64(48, 32), model: 'u2net' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ image: shade(0), render_id: expect.stringMatching(/^render-/) });
    expect(res.json().warnings).toEqual([`model: "u2net" runs as ${SEGMENTATION_FILES.backgroundRemoval}, the background-removal model ComfyUI has`]);
    const cutout = planRender(f.starts[0]!.request, { renderId: 'render-rembg' });
    expect(f.starts[0]!.request).toMatchObject({ kind: 'segment', width: 48, height: 32, segment: { outputs: ['cutout'] } });
    expect(classesOf(cutout.items[0]!.graph)).toEqual([
      'LoadImage',
      'LoadBackgroundRemovalModel',
      'RemoveBackground',
      'InvertMask',
      'JoinImageWithAlpha',
      'SaveImage',
    ]);

    const masked = await post(f, '/rembg', {
      input_image: `data:image/png;base64,${pngB64(16, 16)}`,
      model: 'birefnet',
      return_mask: true,
      alpha_matting: true,
    });
    expect(masked.statusCode, masked.body).toBe(200);
    expect(masked.json().warnings).toEqual(["alpha_matting: not applied; the mask is the model's own"]);
    const mask = planRender(f.starts[1]!.request, { renderId: 'render-rembg' });
    expect(classesOf(mask.items[0]!.graph)).toEqual(['LoadImage', 'LoadBackgroundRemovalModel', 'RemoveBackground', 'MaskToImage', 'SaveImage']);
    for (const { graph } of [...cutout.items, ...mask.items]) {
      expect(schemaProblems(graph, installed)).toEqual([]);
      expect(preflightGraph(graph, installed)).toEqual({ ok: true });
    }
  });

  it('model "None" answers null as the extension does; nothing is started', async () => {
    const f = await front();
    const res = await post(f, '/rembg', { input_image: pngB64(8, 8), model: 'None' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('null');
    expect(f.starts).toHaveLength(0);
  });

  it('bad input is a 422 naming the field, a missing model file a 422 naming the file; nothing started, nothing stored', async () => {
    const cases: Array<[ObjectInfo, Record<string, unknown>, string, RegExp]> = [
      [installed, { input_image: pngB64(8, 8), model: 'rmbg-9000' }, 'model', /"rmbg-9000" is not a background-removal model; available: u2net, /],
      [installed, { model: 'u2net' }, 'input_image', /an image is required/],
      [installed, { input_image: 'not an image' }, 'input_image', /./],
      [installed, { input_image: pngB64(8, 8), return_mask: 'sometimes' }, 'return_mask', /./],
      [bare, { input_image: pngB64(8, 8) }, 'model', /model file birefnet\.safetensors is missing \(not in LoadBackgroundRemovalModel\.bg_removal_name\)/],
    ];
    for (const [info, body, field, detail] of cases) {
      const f = await front(info);
      const res = await post(f, '/rembg', body);
      // 422 for the fields; an undecodable image is the image decoder's 400, as on every image route.
      expect(res.statusCode, res.body).toBe(field === 'input_image' && body.input_image ? 400 : 422);
      expect(res.json()).toMatchObject({ error: 'HTTPException', field });
      expect(res.json().detail).toMatch(detail);
      expect(f.starts).toHaveLength(0);
      expect(blobFiles(f.blobDir)).toEqual([]);
    }
  });
});

describe('POST /sam/sam-predict', () => {
  const body = {
    sam_model_name: 'sam_vit_h_4b8939.pth',
    input_image: pngB64(40, 24),
    dino_enabled: true,
    dino_text_prompt: 'the dog',
    dino_box_threshold: 0.4,
  };

  it("a text prompt: blended image, mask and masked image from one SAM3_Detect layout, in the extension's answer", async () => {
    const f = await front();
    const res = await post(f, '/sam/sam-predict', { ...body, dino_model_name: 'GroundingDINO_SwinT_OGC (694MB)' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      msg: 'SAM3 inference with text prompt "the dog" done.',
      blended_images: [shade(0)],
      masks: [shade(1)],
      masked_images: [shade(2)],
      warnings: [`sam_model_name: "sam_vit_h_4b8939.pth" runs as ${SEGMENTATION_FILES.sam3} (SAM3)`],
    });
    const { request } = f.starts[0]!;
    expect(request).toMatchObject({
      kind: 'segment',
      batchSize: 3,
      segment: { method: { kind: 'text', text: 'the dog', threshold: 0.4, checkpoint: SEGMENTATION_FILES.sam3 }, outputs: ['blended', 'mask', 'cutout'] },
    });
    const plan = planRender(request, { renderId: 'render-sam' });
    expect(plan.items.map((i) => classesOf(i.graph).at(-2))).toEqual(['ImageBlend', 'MaskToImage', 'JoinImageWithAlpha']);
    for (const { graph } of plan.items) {
      expect(graph.detect).toMatchObject({ class_type: 'SAM3_Detect', inputs: { threshold: 0.4, conditioning: ['sam_text', 0], model: ['sam_model', 0] } });
      expect(graph.sam_text).toMatchObject({ class_type: 'CLIPTextEncode', inputs: { text: 'the dog', clip: ['sam_model', 1] } });
      expect(schemaProblems(graph, installed)).toEqual([]);
      expect(preflightGraph(graph, installed)).toEqual({ ok: true });
    }
    // The three graphs share every node up to the mask (ComfyUI's cache runs SAM3 once per image).
    expect(plan.items[1]!.graph.detect).toEqual(plan.items[0]!.graph.detect);
  });

  it("no prompt answers the extension's message and runs nothing; points alone, a bad threshold or a missing SAM3 file are 422s naming the field", async () => {
    const f = await front();
    const none = await post(f, '/sam/sam-predict', { input_image: pngB64(8, 8) });
    expect(none.statusCode).toBe(200);
    expect(none.json()).toEqual({ msg: 'You neither added point prompts nor enabled GroundingDINO. Segmentation cannot be generated.' });
    const cases: Array<[ObjectInfo, Record<string, unknown>, string, RegExp]> = [
      [installed, { input_image: pngB64(8, 8), sam_positive_points: [[1, 2]] }, 'sam_positive_points', /point prompts are not supported/],
      [installed, { ...body, dino_box_threshold: 2 }, 'dino_box_threshold', /out of range/],
      [installed, { ...body, sam_negative_points: 'x' }, 'sam_negative_points', /./],
      [installed, { dino_enabled: true, dino_text_prompt: 'dog' }, 'input_image', /an image is required/],
      [bare, body, 'sam_model_name', /model file sam3\.1_multiplex_fp16\.safetensors is missing \(not in CheckpointLoaderSimple\.ckpt_name\)/],
    ];
    for (const [info, b, field, detail] of cases) {
      const g = await front(info);
      const res = await post(g, '/sam/sam-predict', b);
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json()).toMatchObject({ field });
      expect(res.json().detail).toMatch(detail);
      expect(g.starts).toHaveLength(0);
      expect(blobFiles(g.blobDir)).toEqual([]);
    }
    expect(f.starts).toHaveLength(0);
  });
});

describe('the segmentation graphs on the fake ComfyUI', () => {
  let fake: FakeComfyUI;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-segment-'));
    fake = await startFakeComfyUI({ port: 0, dataDir, logLevel: 'silent' });
  });
  afterAll(async () => {
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('rembg and sam-predict renders run there: images of the source size, a mask that img2img takes as its inpaint mask', async () => {
    const f = await front();
    await post(f, '/rembg', { input_image: pngB64(40, 24), return_mask: true });
    await post(f, '/sam/sam-predict', { input_image: pngB64(40, 24), dino_enabled: true, dino_text_prompt: 'a cat' });
    const http = httpClient(fake.url);
    const saved: Array<{ filename: string; subfolder: string }> = [];
    for (const [n, start] of f.starts.entries()) {
      const plan = planRender(start.request, { renderId: `render-seg-${n}` });
      for (const u of plan.uploads) {
        mkdirSync(path.join(dataDir, 'input', u.subfolder), { recursive: true });
        writeFileSync(
          path.join(dataDir, 'input', u.subfolder, u.filename),
          makePngWith(40, 24, (x) => [x * 6, 0, 0, 255]),
        );
      }
      for (const item of plan.items) {
        const { prompt_id, node_errors } = await http.submit(item.graph);
        expect(node_errors).toEqual({});
        const h = await http.waitForHistory<{ status: { status_str: string }; outputs: Record<string, { images: typeof saved }> }>(prompt_id);
        expect(h.status.status_str).toBe('success');
        saved.push(...h.outputs[plan.outputNode]!.images);
      }
    }
    expect(saved).toHaveLength(4);
    const pngs = await Promise.all(
      saved.map(async (s) => Buffer.from(await (await fetch(`${fake.url}/view?filename=${s.filename}&subfolder=${s.subfolder}&type=output`)).arrayBuffer())),
    );
    for (const png of pngs) expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([40, 24]);
    // The rembg mask, then SAM's mask (its second output), as an img2img inpaint mask over a 40x24 image.
    for (const mask of [pngs[0]!, pngs[2]!]) {
      const { request } = normalizeRequest(
        'img2img',
        { init_images: [pngB64(40, 24)], mask: mask.toString('base64'), prompt: 'x', model: 'imagegen-flux-dev' },
        ctx(),
      );
      expect(request.mask).toMatchObject({ width: 40, height: 24, mime: 'image/png' });
    }
  });
});
