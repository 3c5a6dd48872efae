/**
 * sd-webui-controlnet's API on txt2img / img2img (src/api/a1111/controlnet.ts): `alwayson_scripts.controlnet.args`
 * units reach the neutral `request.controls` through the front (in-process, Fastify inject), refused units are
 * 4xx answers naming the unit's field with nothing stored or started.
 */
import { existsSync, readdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestFront, type TestFront } from '../support/front.ts';
import { makePng, pngB64 } from '../golden/helpers.ts';
import { expectImageRender } from '../../src/contracts/render.ts';

const fronts: TestFront[] = [];
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});
async function front(): Promise<TestFront> {
  const f = await startTestFront();
  fronts.push(f);
  return f;
}

const json = { 'content-type': 'application/json' };
const red = makePng(64, 64, [255, 0, 0, 255]);
const blue = makePng(48, 48, [0, 0, 255, 255]);
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const blobCount = (f: TestFront): number =>
  existsSync(f.blobDir) ? readdirSync(f.blobDir, { recursive: true }).filter((n) => /[0-9a-f]{64}$/.test(String(n))).length : 0;

const post = (f: TestFront, route: 'txt2img' | 'img2img', body: Record<string, unknown>) =>
  f.app.inject({
    method: 'POST',
    url: `/sdapi/v1/${route}`,
    headers: json,
    payload: JSON.stringify({ prompt: 'a fox', width: 64, height: 64, steps: 2, ...body }),
  });
const cn = (...args: unknown[]) => ({ alwayson_scripts: { controlnet: { args } } });

describe('ControlNet units on txt2img', () => {
  it('two units (canny + none) on Flux dev reach request.controls with their values; images are stored by content', async () => {
    const f = await front();
    const res = await post(f, 'txt2img', {
      model: 'imagegen-flux-dev',
      ...cn(
        {
          enabled: true,
          module: 'canny',
          model: 'control_v11p_sd15_canny [d14c016b]',
          image: red.toString('base64'),
          weight: 0.8,
          guidance_start: 0.1,
          guidance_end: 0.9,
          threshold_a: 51,
          threshold_b: 204,
        },
        { enabled: true, module: 'none', model: 'flux1-dev-controlnet-union-pro', image: `data:image/png;base64,${blue.toString('base64')}`, weight: 1.5 },
      ),
    });
    // The test front's renders end in a 503 ("no GPU"): the request passed every check and started.
    expect(res.statusCode, res.body).toBe(503);
    expect(f.starts).toHaveLength(1);
    const { controls } = expectImageRender(f.starts[0]!.request);
    expect(controls).toEqual([
      {
        kind: 'controlnet',
        image: expect.objectContaining({ sha256: sha(red), width: 64, height: 64, mime: 'image/png' }),
        preprocessor: 'canny',
        canny: { low: 0.2, high: 0.8 },
        controlType: 'canny/lineart/anime_lineart/mlsd',
        strength: 0.8,
        start: 0.1,
        end: 0.9,
      },
      {
        kind: 'controlnet',
        image: expect.objectContaining({ sha256: sha(blue), width: 48, height: 48 }),
        preprocessor: 'none',
        controlType: 'auto',
        strength: 1.5,
        start: 0,
        end: 1,
      },
    ]);
    expect(blobCount(f)).toBe(2);
  });

  it('the extension\'s own test body (script key "ControlNet", names for modes, defaults for thresholds) is applied, and its non-applied values are warned', async () => {
    const f = await front();
    const unit = {
      control_mode: 'My prompt is more important',
      enabled: true,
      guidance_end: 1,
      guidance_start: 0,
      pixel_perfect: true,
      processor_res: 512,
      resize_mode: 'Just Resize',
      threshold_a: -1,
      threshold_b: -1,
      weight: 1,
      module: 'canny',
      model: 'control_v11p_sd15_canny [d14c016b]',
      image: pngB64(64, 64),
    };
    const res = await post(f, 'txt2img', { model: 'imagegen-flux-dev', alwayson_scripts: { ControlNet: { args: [unit] } } });
    expect(res.statusCode, res.body).toBe(503);
    const [control] = expectImageRender(f.starts[0]!.request).controls!;
    // The extension's Canny defaults (100, 200 of 255) on ComfyUI's scale.
    expect(control).toMatchObject({ kind: 'controlnet', preprocessor: 'canny', canny: { low: 0.39, high: 0.78 }, strength: 1, start: 0, end: 1 });
  });

  it('named and numbered modes warn only when they ask for what is not applied; the alwayson_scripts warning is for other scripts', async () => {
    const { normalizeRequest } = await import('../../src/api/a1111/normalize.ts');
    const { ctx } = await import('../golden/helpers.ts');
    const base = { enabled: true, module: 'none', image: pngB64(64, 64) };
    const warn = (unit: Record<string, unknown>, scripts: Record<string, unknown> = {}) =>
      normalizeRequest('txt2img', { alwayson_scripts: { controlnet: { args: [{ ...base, ...unit }] }, ...scripts } }, ctx()).warnings;
    expect(warn({ control_mode: 0, resize_mode: 1 })).toEqual([]);
    expect(warn({ control_mode: 'Balanced', resize_mode: 'Crop and Resize', pixel_perfect: true, processor_res: 512 })).toEqual([]);
    expect(warn({ control_mode: 2 })).toEqual([
      expect.stringMatching(/^alwayson_scripts\.controlnet\.args\.0\.control_mode: "ControlNet is more important" not applied/),
    ]);
    expect(warn({ resize_mode: 'Envelope (Outer Fit)' })).toEqual([
      expect.stringMatching(/^alwayson_scripts\.controlnet\.args\.0\.resize_mode: "Resize and Fill" not applied/),
    ]);
    expect(warn({ resize_mode: 0 })).toEqual([expect.stringMatching(/resize_mode: "Just Resize" not applied/)]);
    expect(warn({}, { ADetailer: { args: [] } })).toEqual([expect.stringMatching(/^alwayson_scripts: .*other than ControlNet/)]);
  });

  it('an ip-adapter unit is an image prompt (weight → strength), said in the warnings', async () => {
    const f = await front();
    const res = await post(f, 'txt2img', {
      model: 'imagegen-flux-dev',
      ...cn({
        enabled: true,
        module: 'ip-adapter_clip_sdxl_plus_vith',
        model: 'ip-adapter-plus_sdxl_vit-h [f1f1f1f1]',
        weight: 0.6,
        image: red.toString('base64'),
      }),
    });
    expect(res.statusCode, res.body).toBe(503);
    expect(expectImageRender(f.starts[0]!.request).controls).toEqual([
      { kind: 'image-prompt', image: expect.objectContaining({ sha256: sha(red) }), strength: 0.6 },
    ]);
  });

  it('a disabled unit (enabled false, or absent as in the extension) is skipped: no controls, its image not stored', async () => {
    const f = await front();
    const res = await post(f, 'txt2img', {
      model: 'imagegen-flux-dev',
      ...cn({ enabled: false, module: 'canny', image: red.toString('base64') }, { module: 'canny', image: blue.toString('base64') }),
    });
    expect(res.statusCode, res.body).toBe(503);
    expect(expectImageRender(f.starts[0]!.request).controls).toBeUndefined();
    expect(blobCount(f)).toBe(0);
  });

  it('an unknown module is a 422 naming the unit field and listing the available modules; nothing stored or started', async () => {
    const f = await front();
    const res = await post(f, 'txt2img', {
      model: 'imagegen-flux-dev',
      ...cn({ enabled: true, module: 'none', image: red.toString('base64') }, { enabled: true, module: 'depth_midas', image: blue.toString('base64') }),
    });
    expect(res.statusCode).toBe(422);
    const body = res.json();
    expect(body.field).toBe('alwayson_scripts.controlnet.args.1.module');
    expect(body.detail).toMatch(/depth_midas/);
    expect(body.detail).toMatch(/none, canny, invert, ip-adapter-auto/);
    expect(body.available).toEqual(expect.arrayContaining(['none', 'canny', 'invert']));
    expect(f.starts).toHaveLength(0);
    expect(blobCount(f)).toBe(0);
  });

  it('Qwen-Image with a unit it cannot take (an image prompt; a pose hint) is a 400 naming the unit and why; nothing stored', async () => {
    const f = await front();
    for (const unit of [
      { enabled: true, module: 'ip-adapter-auto', image: red.toString('base64') },
      { enabled: true, module: 'none', model: 'control_v11p_sd15_openpose', image: red.toString('base64') },
    ]) {
      const res = await post(f, 'txt2img', { model: 'imagegen-qwen-image', ...cn({ enabled: true, module: 'canny', image: blue.toString('base64') }, unit) });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().field).toBe('alwayson_scripts.controlnet.args.1');
      expect(res.json().detail).toMatch(/imagegen-qwen-image has no/);
    }
    expect(f.starts).toHaveLength(0);
    expect(blobCount(f)).toBe(0);
  });

  it("Qwen-Image takes a canny unit as its DiffSynth patch; a step range it cannot apply is named in info's warnings", async () => {
    const { normalizeRequest } = await import('../../src/api/a1111/normalize.ts');
    const { ctx } = await import('../golden/helpers.ts');
    const { request, warnings } = normalizeRequest(
      'txt2img',
      { model: 'imagegen-qwen-image', ...cn({ enabled: true, module: 'canny', image: pngB64(64, 64), guidance_end: 0.5 }) },
      ctx(),
    );
    expect(request.controls).toMatchObject([{ kind: 'controlnet', preprocessor: 'canny', controlType: 'canny/lineart/anime_lineart/mlsd', end: 0.5 }]);
    expect(warnings).toEqual([expect.stringMatching(/^alwayson_scripts\.controlnet\.args\.0\.guidance_end: not applied/)]);
  });

  it('field errors name the unit field: weight out of range, start after end, a bad mode, no image on txt2img', async () => {
    const f = await front();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ weight: 3 }, 'weight'],
      [{ guidance_start: 0.8, guidance_end: 0.2 }, 'guidance_start'],
      [{ control_mode: 'Loud' }, 'control_mode'],
      [{ resize_mode: 7 }, 'resize_mode'],
      [{ image: undefined }, 'image'],
      [{ weight: 'heavy' }, 'weight'],
    ];
    for (const [over, field] of cases) {
      const res = await post(f, 'txt2img', { ...cn({ enabled: true, module: 'none', image: red.toString('base64'), ...over }) });
      expect(res.statusCode, JSON.stringify(over)).toBe(422);
      expect(res.json().field).toBe(`alwayson_scripts.controlnet.args.0.${field}`);
    }
    expect(f.starts).toHaveLength(0);
  });
});

describe("webuiapi 0.9.17's ControlNetUnit (payload alwayson_scripts.ControlNet = {args: [unit.to_dict(), ...]})", () => {
  /** The keys and defaults of webuiapi's ControlNetUnit.to_dict() (raw base64 PNG, mask None, control_mode by name). */
  const webuiapiUnit = (over: Record<string, unknown>) => ({
    image: '',
    mask: null,
    module: 'none',
    model: 'None',
    weight: 1.0,
    resize_mode: 'Resize and Fill',
    low_vram: false,
    processor_res: 512,
    threshold_a: 64,
    threshold_b: 64,
    guidance_start: 0.0,
    guidance_end: 1.0,
    control_mode: 'Balanced',
    pixel_perfect: false,
    hr_option: 'Both',
    enabled: true,
    ...over,
  });

  it('two units (canny and none) render; its defaults that are not applied are named in info.warnings', async () => {
    const f = await front();
    const units = [
      webuiapiUnit({ image: red.toString('base64'), module: 'canny', model: 'flux1-dev-controlnet-union-pro' }),
      webuiapiUnit({ image: blue.toString('base64'), module: 'none', model: 'flux1-dev-controlnet-union-pro', weight: 0.5 }),
    ];
    const res = await post(f, 'txt2img', { model: 'imagegen-flux-dev', alwayson_scripts: { ControlNet: { args: units } } });
    expect(res.statusCode, res.body).toBe(503);
    expect(expectImageRender(f.starts[0]!.request).controls).toMatchObject([
      { kind: 'controlnet', preprocessor: 'canny', canny: { low: 0.25, high: 0.25 }, controlType: 'canny/lineart/anime_lineart/mlsd', strength: 1 },
      { kind: 'controlnet', preprocessor: 'none', controlType: 'auto', strength: 0.5 },
    ]);
    const { normalizeRequest } = await import('../../src/api/a1111/normalize.ts');
    const { ctx } = await import('../golden/helpers.ts');
    const { warnings } = normalizeRequest('txt2img', { model: 'imagegen-flux-dev', alwayson_scripts: { ControlNet: { args: units } } }, ctx());
    expect(warnings).toEqual([
      expect.stringMatching(/^alwayson_scripts\.ControlNet\.args\.0\.resize_mode: "Resize and Fill" not applied/),
      expect.stringMatching(/^alwayson_scripts\.ControlNet\.args\.0\.processor_res: not applied/),
      expect.stringMatching(/^alwayson_scripts\.ControlNet\.args\.1\.resize_mode: "Resize and Fill" not applied/),
    ]);
  });

  it('no units (webuiapi always sends ControlNet: {args: []}) is a plain render without warnings', async () => {
    const { normalizeRequest } = await import('../../src/api/a1111/normalize.ts');
    const { ctx } = await import('../golden/helpers.ts');
    const { request, warnings } = normalizeRequest('txt2img', { prompt: 'x', alwayson_scripts: { ControlNet: { args: [] } } }, ctx());
    expect(request.controls).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('an enabled unit without an image on txt2img is a 422 naming its image field', async () => {
    const f = await front();
    const res = await post(f, 'txt2img', { alwayson_scripts: { ControlNet: { args: [webuiapiUnit({ module: 'canny' })] } } });
    expect(res.statusCode).toBe(422);
    expect(res.json().field).toBe('alwayson_scripts.ControlNet.args.0.image');
  });
});

describe('ControlNet units on img2img', () => {
  it('a unit without an image takes the init image; {image, mask} and input_image forms are read, the mask warned', async () => {
    const f = await front();
    const res = await post(f, 'img2img', {
      model: 'imagegen-flux-dev',
      init_images: [red.toString('base64')],
      ...cn({ enabled: true, module: 'invert' }, { enabled: true, module: 'none', input_image: { image: blue.toString('base64'), mask: pngB64(48, 48) } }),
    });
    expect(res.statusCode, res.body).toBe(503);
    const request = expectImageRender(f.starts[0]!.request);
    expect(request.controls).toMatchObject([
      { kind: 'controlnet', preprocessor: 'invert', controlType: 'canny/lineart/anime_lineart/mlsd', image: { sha256: sha(red) } },
      { kind: 'controlnet', preprocessor: 'none', image: { sha256: sha(blue) } },
    ]);
    // The init image and the unit's image are one blob each (content-addressed).
    expect(blobCount(f)).toBe(2);
  });

  it("the unit's mask is named in the warnings; parameters echo the units without their images", async () => {
    const { normalizeRequest } = await import('../../src/api/a1111/normalize.ts');
    const { ctx } = await import('../golden/helpers.ts');
    const unit = { enabled: true, module: 'none', image: [pngB64(48, 48), pngB64(48, 48, [0, 0, 0, 255])], weight: 0.5 };
    const { warnings, parameters } = normalizeRequest('img2img', { init_images: [pngB64(64, 64)], ...cn(unit) }, ctx());
    expect(warnings).toEqual([expect.stringMatching(/^alwayson_scripts\.controlnet\.args\.0\.image\.1: a ControlNet mask is not applied/)]);
    expect(parameters.alwayson_scripts).toEqual({ controlnet: { args: [{ enabled: true, module: 'none', image: null, weight: 0.5 }] } });
  });
});

describe('hostile unit values', () => {
  it('any JSON in the unit fields and the detect body is a 2xx/4xx/503 answer with a field, never a 500', async () => {
    const fc = (await import('fast-check')).default;
    const f = await front();
    const junk = fc.oneof(
      fc.constantFrom(null, true, -1, 0, 1, 2, 3, 1e308, -1e308, '', 'none', 'canny', 'invert', 'ip-adapter', 'Balanced', 'Crop and Resize', pngB64(8, 8)),
      fc.string({ maxLength: 12 }),
      fc.double(),
      fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.constant(pngB64(8, 8))), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom('image', 'mask', 'x'), fc.oneof(fc.string({ maxLength: 4 }), fc.constant(pngB64(8, 8)), fc.integer())),
    );
    const unitKeys = ['enabled', 'module', 'model', 'weight', 'image', 'input_image', 'mask', 'resize_mode', 'control_mode', 'processor_res'];
    const detectKeys = ['controlnet_module', 'controlnet_input_images', 'controlnet_images', 'controlnet_threshold_a', 'controlnet_masks'];
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom(...unitKeys, 'guidance_start', 'guidance_end', 'threshold_a'), junk),
        fc.oneof(fc.constant(undefined), junk),
        fc.dictionary(fc.constantFrom(...detectKeys), junk),
        async (unit, args, detectBody) => {
          const res = await post(f, 'txt2img', { alwayson_scripts: { controlnet: { args: args === undefined ? [{ enabled: true, ...unit }] : args } } });
          expect(res.statusCode === 503 || (res.statusCode >= 400 && res.statusCode < 500), res.body).toBe(true);
          if (res.statusCode !== 503) expect(typeof res.json().detail).toBe('string');
          const d = await f.app.inject({ method: 'POST', url: '/controlnet/detect', headers: json, payload: JSON.stringify(detectBody) });
          expect(d.statusCode === 503 || (d.statusCode >= 400 && d.statusCode < 500), d.body).toBe(true);
        },
      ),
      { numRuns: 150, seed: 2026 },
    );
  }, 60_000);
});
