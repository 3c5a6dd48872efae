/**
 * The ControlNet extension's routes (src/api/a1111/controlnet-routes.ts) in its shapes (scripts/api.py of
 * sd-webui-controlnet): the read routes, whose names a unit takes back, and `POST /controlnet/detect` as a
 * `preprocess` render whose graphs the recorded /object_info accepts.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestFront, type TestFront } from '../support/front.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { preflightGraph } from '../../src/comfyui/preflight.ts';
import { planRender } from '../../src/models/plan.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { OBJECT_INFO_FIXTURE_URL } from '../../tools/fake-comfyui/fixture.ts';
import { ctx, makePng, pngB64 } from '../golden/helpers.ts';
import { schemaProblems } from '../golden/schema-check.ts';

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});
async function front(): Promise<TestFront> {
  const f = await startTestFront();
  fronts.push(f);
  return f;
}
const get = async (f: TestFront, url: string) => {
  const res = await f.app.inject({ url });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
  return res.json();
};

describe('/controlnet/* read routes', () => {
  it('version and settings', async () => {
    const f = await front();
    expect(await get(f, '/controlnet/version')).toEqual({ version: 3 });
    expect(await get(f, '/controlnet/settings')).toEqual({ control_net_unit_count: 4 });
  });

  it("model_list names the profiles' control files by stem; each one, sent back as a unit's model, is taken", async () => {
    const f = await front();
    const { model_list } = await get(f, '/controlnet/model_list?update=true');
    expect(model_list).toEqual(
      expect.arrayContaining([
        'flux1-dev-controlnet-union-pro',
        'flux1-redux-dev',
        'qwen_image_canny_diffsynth_controlnet',
        'qwen_image_depth_diffsynth_controlnet',
        'qwen_image_inpaint_diffsynth_controlnet',
      ]),
    );
    const unit = (model: string) => ({ alwayson_scripts: { controlnet: { args: [{ enabled: true, model, image: pngB64(64, 64) }] } } });
    const kinds = (model: string, on: string) => normalizeRequest('txt2img', { model: on, ...unit(model) }, ctx()).request.controls;
    expect(kinds('flux1-dev-controlnet-union-pro', 'imagegen-flux-dev')).toMatchObject([{ kind: 'controlnet', controlType: 'auto' }]);
    expect(kinds('flux1-redux-dev', 'imagegen-flux-dev')).toMatchObject([{ kind: 'image-prompt' }]);
    expect(kinds('qwen_image_depth_diffsynth_controlnet', 'imagegen-qwen-image')).toMatchObject([{ kind: 'controlnet', controlType: 'depth' }]);
    expect(kinds('qwen_image_inpaint_diffsynth_controlnet', 'imagegen-qwen-image')).toMatchObject([{ kind: 'controlnet', controlType: 'repaint' }]);
  });

  it('module_list: names (or labels with alias_names) and their sliders', async () => {
    const f = await front();
    const plain = await get(f, '/controlnet/module_list');
    expect(plain.module_list.slice(0, 3)).toEqual(['none', 'canny', 'invert']);
    expect(plain.module_list).toContain('ip-adapter-auto');
    expect(plain.module_detail.canny).toEqual({
      model_free: false,
      sliders: [
        { name: 'Resolution', value: 512, min: 64, max: 2048, step: 8 },
        { name: 'Low Threshold', value: 100, min: 1, max: 255, step: 1 },
        { name: 'High Threshold', value: 200, min: 1, max: 255, step: 1 },
      ],
    });
    const alias = await get(f, '/controlnet/module_list?alias_names=true');
    expect(alias.module_list).toContain('invert (from white bg & black line)');
    expect(Object.keys(alias.module_detail)).toEqual(alias.module_list);
  });

  it('control_types: modules and models per tab, none/None first, defaults', async () => {
    const f = await front();
    const { control_types } = await get(f, '/controlnet/control_types');
    expect(control_types.All).toMatchObject({ default_option: 'none', model_list: expect.arrayContaining(['None', 'flux1-dev-controlnet-union-pro']) });
    expect(control_types.Canny).toEqual({
      module_list: ['none', 'canny', 'invert'],
      model_list: ['None', 'flux1-dev-controlnet-union-pro', 'qwen_image_canny_diffsynth_controlnet'],
      default_option: 'canny',
      default_model: 'flux1-dev-controlnet-union-pro',
    });
    expect(control_types.Depth.model_list).toEqual(['None', 'flux1-dev-controlnet-union-pro', 'qwen_image_depth_diffsynth_controlnet']);
    expect(control_types['IP-Adapter']).toMatchObject({
      module_list: expect.arrayContaining(['none', 'ip-adapter-auto']),
      model_list: ['None', 'flux1-redux-dev'],
    });
  });
});

describe('POST /controlnet/detect', () => {
  const objectInfo = objectInfoSchema.parse(JSON.parse(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')));
  const detect = (f: TestFront, body: Record<string, unknown>) =>
    f.app.inject({ method: 'POST', url: '/controlnet/detect', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  it('canny on two images: a preprocess render, one Canny graph per image on the 0..1 scale, answered {images, info: "Success"}', async () => {
    const f = await front();
    const blobs = new FsBlobStore(f.blobDir);
    f.outcome = async (started) => {
      const request = f.starts.at(-1)!.request;
      const outputs = [];
      for (let i = 0; i < request.batchSize; i++)
        outputs.push(await blobs.put(makePng(8, 8, [i * 200, 0, 0, 255]), { mime: 'image/png', width: 8, height: 8 }));
      return { renderId: started.renderId, outputs, seeds: [0, 1], request, backend: 'comfyui-0', promptIds: [], timings: [] } satisfies RenderResult;
    };
    const res = await detect(f, {
      controlnet_module: 'canny',
      controlnet_input_images: [pngB64(64, 48), `data:image/png;base64,${pngB64(32, 32, [0, 0, 0, 255])}`],
      controlnet_threshold_a: 51,
      controlnet_threshold_b: 153,
    });
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json();
    expect(answer).toMatchObject({ info: 'Success', render_id: expect.stringMatching(/^render-/) });
    expect(answer.images).toEqual([makePng(8, 8, [0, 0, 0, 255]).toString('base64'), makePng(8, 8, [200, 0, 0, 255]).toString('base64')]);
    const { request } = f.starts[0]!;
    expect(request).toMatchObject({
      kind: 'preprocess',
      batchSize: 2,
      width: 64,
      height: 48,
      preprocess: { preprocessor: 'canny', canny: { low: 0.2, high: 0.6 } },
    });
    const plan = planRender(request, { renderId: 'render-detect' });
    expect(plan.items).toHaveLength(2);
    for (const { graph } of plan.items) {
      expect(Object.values(graph).map((n) => n.class_type)).toEqual(['LoadImage', 'Canny', 'SaveImage']);
      expect(schemaProblems(graph, objectInfo)).toEqual([]);
      expect(preflightGraph(graph, objectInfo)).toEqual({ ok: true });
    }
  });

  it("webuiapi's body (controlnet_images, module invert by its label) renders ImageInvert; none passes the image through", async () => {
    const f = await front();
    for (const [module, classes] of [
      ['invert (from white bg & black line)', ['LoadImage', 'ImageInvert', 'SaveImage']],
      ['none', ['LoadImage', 'SaveImage']],
    ] as const) {
      const res = await detect(f, {
        controlnet_module: module,
        controlnet_images: [pngB64(16, 16)],
        controlnet_processor_res: 512,
        controlnet_threshold_a: 64,
        controlnet_threshold_b: 64,
      });
      expect(res.statusCode, res.body).toBe(503);
      const graph = planRender(f.starts.at(-1)!.request, { renderId: 'render-detect' }).items[0]!.graph;
      expect(Object.values(graph).map((n) => n.class_type)).toEqual(classes);
      expect(preflightGraph(graph, objectInfo)).toEqual({ ok: true });
    }
  });

  it('an unknown or image-prompt module, or no image, is a 422 naming the field; nothing started', async () => {
    const f = await front();
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [
        { controlnet_module: 'depth_midas', controlnet_input_images: [pngB64(16, 16)] },
        'controlnet_module',
        /not available; available modules: none, canny, invert/,
      ],
      [{ controlnet_module: 'ip-adapter-auto', controlnet_input_images: [pngB64(16, 16)] }, 'controlnet_module', /image-prompt module/],
      [{ controlnet_module: 'canny', controlnet_input_images: [] }, 'controlnet_input_images', /No image selected/],
      [{ controlnet_module: 'canny', controlnet_input_images: ['not an image'] }, 'controlnet_input_images.0', /./],
    ];
    for (const [body, field, detail] of cases) {
      const res = await detect(f, body);
      expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, res.body).toBeLessThan(500);
      expect(res.json().field).toBe(field);
      expect(res.json().detail).toMatch(detail);
    }
    expect(f.starts).toHaveLength(0);
  });
});
