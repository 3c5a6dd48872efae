/**
 * The ControlNet extension's read routes (src/api/a1111/controlnet-routes.ts) in its shapes (scripts/api.py of
 * sd-webui-controlnet), and the names they list are ones a unit takes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startTestFront, type TestFront } from '../support/front.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { ctx, pngB64 } from '../golden/helpers.ts';

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
