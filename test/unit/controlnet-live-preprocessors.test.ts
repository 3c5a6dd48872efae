/**
 * Late-bound ControlNet preprocessors (src/models/preprocessors.ts): a module beyond none/canny/invert runs as the
 * preprocessor node the live ComfyUI's /object_info offers (here comfyui_controlnet_aux's DepthAnythingPreprocessor,
 * given to the front's catalog and to the fake ComfyUI as an extra node), with processor_res as its resolution;
 * `/controlnet/module_list` lists it; a module nobody has is a 422 naming it and listing those available.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestFront, type TestFront } from '../support/front.ts';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { preflightGraph } from '../../src/comfyui/preflight.ts';
import { planRender } from '../../src/models/plan.ts';
import { livePreprocessors } from '../../src/models/preprocessors.ts';
import { loadRawObjectInfo, withProfileFiles } from '../../tools/fake-comfyui/fixture.ts';
import type { RawObjectInfo } from '../../tools/fake-comfyui/node-schema.ts';
import { startFakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { httpClient } from '../../tools/fake-comfyui/testing.ts';
import { makePngWith, pngB64 } from '../golden/helpers.ts';
import { expectImageRender } from '../../src/contracts/render.ts';

/** comfyui_controlnet_aux's node as its node_wrappers/depth_anything.py declares it (define_preprocessor_inputs). */
const DEPTH_ANYTHING = {
  input: {
    required: { image: ['IMAGE'] },
    optional: {
      ckpt_name: [['depth_anything_vitl14.pth', 'depth_anything_vitb14.pth', 'depth_anything_vits14.pth'], {}],
      resolution: ['INT', { default: 512, min: 64, max: 16384, step: 64 }],
    },
  },
  input_order: { required: ['image'], optional: ['ckpt_name', 'resolution'] },
  output: ['IMAGE'],
  output_is_list: [false],
  output_name: ['IMAGE'],
  name: 'DepthAnythingPreprocessor',
  display_name: 'Depth Anything',
  description: '',
  python_module: 'custom_nodes.comfyui_controlnet_aux',
  category: 'ControlNet Preprocessors/Normal and Depth Estimators',
  output_node: false,
};

const withAux = (): RawObjectInfo => ({ ...withProfileFiles(loadRawObjectInfo()), DepthAnythingPreprocessor: DEPTH_ANYTHING });
const info = objectInfoSchema.parse(withAux());

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});
async function front(): Promise<TestFront> {
  const f = await startTestFront({}, { objectInfo: async () => info });
  fronts.push(f);
  return f;
}
const post = (f: TestFront, url: string, body: unknown) =>
  f.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
const unitBody = (module: string, extra: Record<string, unknown> = {}) => ({
  prompt: 'a house',
  model: 'imagegen-flux-dev',
  alwayson_scripts: { controlnet: { args: [{ enabled: true, module, model: 'flux1-dev-controlnet-union-pro', image: pngB64(64, 64), ...extra }] } },
});

describe('late-bound preprocessors', () => {
  it('the live /object_info offers the aux node by its module name and class, with its resolution input', () => {
    expect(livePreprocessors(info)).toEqual([
      { module: 'depth_anything', classType: 'DepthAnythingPreprocessor', resolution: true },
      { module: 'DepthAnythingPreprocessor', classType: 'DepthAnythingPreprocessor', resolution: true },
    ]);
    expect(livePreprocessors(objectInfoSchema.parse(loadRawObjectInfo()))).toEqual([]);
  });

  it('module_list lists it with a resolution slider; a txt2img unit runs it with processor_res, as a depth hint', async () => {
    const f = await front();
    const list = (await f.app.inject({ url: '/controlnet/module_list' })).json();
    expect(list.module_list).toEqual(expect.arrayContaining(['none', 'canny', 'invert', 'depth_anything', 'DepthAnythingPreprocessor']));
    expect(list.module_detail.depth_anything.sliders).toEqual([{ name: 'Resolution', value: 512, min: 64, max: 2048, step: 8 }]);

    await post(f, '/sdapi/v1/txt2img', unitBody('depth_anything', { processor_res: 768 }));
    const request = expectImageRender(f.starts[0]!.request);
    expect(request.controls).toMatchObject([
      {
        kind: 'controlnet',
        preprocessor: 'node',
        node: { module: 'depth_anything', classType: 'DepthAnythingPreprocessor', resolution: 768 },
        controlType: 'depth',
      },
    ]);
    const graph = planRender(request, { renderId: 'render-live' }).items[0]!.graph;
    expect(graph.control_node_0).toMatchObject({ class_type: 'DepthAnythingPreprocessor', inputs: { image: ['control_image_0', 0], resolution: 768 } });
    expect(graph.control_apply_0!.inputs.image).toEqual(['control_node_0', 0]);
    expect(preflightGraph(graph, info)).toEqual({ ok: true });
  });

  it('an unknown module is a 422 naming it and listing what is available (the live node too); nothing started', async () => {
    const f = await front();
    const res = await post(f, '/sdapi/v1/txt2img', unitBody('depth_foo'));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().field).toBe('alwayson_scripts.controlnet.args.0.module');
    expect(res.json().detail).toMatch(/module "depth_foo" is not available; available modules: none, canny, invert, ip-adapter-auto, .*depth_anything/);
    const detect = await post(f, '/controlnet/detect', { controlnet_module: 'lineart_realistic', controlnet_input_images: [pngB64(16, 16)] });
    expect(detect.statusCode, detect.body).toBe(422);
    expect(detect.json()).toMatchObject({ field: 'controlnet_module', available: ['none', 'canny', 'invert', 'depth_anything', 'DepthAnythingPreprocessor'] });
    expect(f.starts).toHaveLength(0);
  });

  it('/controlnet/detect runs it on the fake ComfyUI given the node: an image of the source size', async () => {
    const f = await front();
    await post(f, '/controlnet/detect', {
      controlnet_module: 'DepthAnythingPreprocessor',
      controlnet_input_images: [pngB64(40, 24)],
      controlnet_processor_res: 64,
    });
    const plan = planRender(f.starts[0]!.request, { renderId: 'render-detect-live' });
    expect(plan.items[0]!.graph.preprocess).toMatchObject({ class_type: 'DepthAnythingPreprocessor', inputs: { resolution: 64 } });
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-live-pre-'));
    const fake = await startFakeComfyUI({ port: 0, dataDir, logLevel: 'silent', objectInfo: withAux() });
    try {
      const u = plan.uploads[0]!;
      mkdirSync(path.join(dataDir, 'input', u.subfolder), { recursive: true });
      writeFileSync(
        path.join(dataDir, 'input', u.subfolder, u.filename),
        makePngWith(40, 24, (x) => [x * 6, 0, 0, 255]),
      );
      const http = httpClient(fake.url);
      const { prompt_id } = await http.submit(plan.items[0]!.graph);
      const h = await http.waitForHistory<{
        status: { status_str: string };
        outputs: Record<string, { images: Array<{ filename: string; subfolder: string }> }>;
      }>(prompt_id);
      expect(h.status.status_str).toBe('success');
      const file = h.outputs[plan.outputNode]!.images[0]!;
      const png = Buffer.from(await (await fetch(`${fake.url}/view?filename=${file.filename}&subfolder=${file.subfolder}&type=output`)).arrayBuffer());
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([40, 24]);
    } finally {
      await fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
