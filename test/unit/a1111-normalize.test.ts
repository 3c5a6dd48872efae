import { afterEach, describe, expect, it } from 'vitest';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { applyModelOverrides, listImageProfiles, resetModelOverrides } from '../../src/models/registry.ts';
import { ctx, LIMITS, makePng, makePngWith, pngB64, thrown } from '../golden/helpers.ts';

afterEach(() => resetModelOverrides());

const t2i = (body: Record<string, unknown>, c = ctx()) => normalizeRequest('txt2img', body, c);
const i2i = (body: Record<string, unknown>, c = ctx()) => normalizeRequest('img2img', body, c);
const img = pngB64(64, 64);
const img2 = pngB64(32, 32, [0, 0, 255, 255]);

describe('defaults per model', () => {
  it('flux-dev: 512², 20 steps, cfg 1, guidance 3.5, euler/simple (not A1111 50 steps / cfg 7 / Euler)', () => {
    const { request, warnings } = t2i({ prompt: 'a fox' });
    expect(request).toMatchObject({
      kind: 'txt2img',
      model: 'imagegen-flux-dev',
      prompt: 'a fox',
      negativePrompt: '',
      steps: 20,
      cfg: 1,
      guidance: 3.5,
      sampler: 'euler',
      scheduler: 'simple',
      width: 512,
      height: 512,
      batchSize: 1,
      nIter: 1,
      denoise: 1,
      extraImages: [],
      report: { samplerName: 'Euler', scheduler: 'Simple', requestedWidth: 512, requestedHeight: 512 },
    });
    expect(warnings).toEqual([]);
  });

  it('flux-schnell: 4 steps and no guidance', () => {
    const { request } = t2i({ model: 'imagegen-flux-schnell' });
    expect(request.steps).toBe(4);
    expect(request.guidance).toBeUndefined();
    expect('guidance' in request).toBe(false);
  });

  it('qwen-image: 40 steps, cfg 2.5, negative prompt kept', () => {
    const { request } = t2i({ model: 'imagegen-qwen-image', negative_prompt: 'blurry' });
    expect(request).toMatchObject({ steps: 40, cfg: 2.5, sampler: 'euler', scheduler: 'simple', negativePrompt: 'blurry' });
    expect(request.guidance).toBeUndefined();
  });

  it('qwen-image: client cfg_scale and steps apply', () => {
    const { request } = t2i({ model: 'imagegen-qwen-image', cfg_scale: 4, steps: 25 });
    expect(request).toMatchObject({ cfg: 4, steps: 25 });
  });

  it('flux: cfg always 1 (client cfg warned), negative prompt warned and dropped, distilled_cfg_scale → guidance', () => {
    const logs: unknown[] = [];
    const { request, warnings } = t2i(
      { prompt: 'x', negative_prompt: 'ugly', cfg_scale: 7, distilled_cfg_scale: 5 },
      ctx({ log: (msg, obj) => logs.push([msg, obj]) }),
    );
    expect(request.cfg).toBe(1);
    expect(request.guidance).toBe(5);
    expect(request.negativePrompt).toBe('');
    expect(warnings.some((w) => w.startsWith('cfg_scale:'))).toBe(true);
    expect(warnings.some((w) => w.startsWith('negative_prompt:'))).toBe(true);
    expect(logs).toHaveLength(1);
  });

  it('distilled_cfg_scale on a model without guidance is a warning', () => {
    const { request, warnings } = t2i({ model: 'imagegen-qwen-image', distilled_cfg_scale: 3 });
    expect(request.guidance).toBeUndefined();
    expect(warnings[0]).toMatch(/^distilled_cfg_scale:/);
  });

  it('profile overrides change defaults', () => {
    applyModelOverrides({ 'imagegen-flux-dev': { defaults: { steps: 28, width: 1024, height: 768 } } });
    const { request } = t2i({});
    expect(request).toMatchObject({ steps: 28, width: 1024, height: 768 });
  });
});

describe('model resolution', () => {
  it.each([
    [{ model: 'imagegen-qwen-image' }, 'imagegen-qwen-image'],
    [{ model: 'Qwen-Image' }, 'imagegen-qwen-image'],
    [{ model: 'flux-schnell' }, 'imagegen-flux-schnell'],
    [{ override_settings: { sd_model_checkpoint: 'FLUX.1-schnell [1234567890]' } }, 'imagegen-flux-schnell'],
    [{ model: 'imagegen-qwen-image', override_settings: { sd_model_checkpoint: 'flux-schnell' } }, 'imagegen-qwen-image'],
    [{ model: '', override_settings: { sd_model_checkpoint: 'flux-schnell' } }, 'imagegen-flux-schnell'],
    [{}, 'imagegen-flux-dev'],
  ])('%j → %s', (body, id) => {
    expect(t2i(body).request.model).toBe(id);
  });

  it('default model from context (any accepted name)', () => {
    expect(t2i({}, ctx({ defaultModel: 'Qwen-Image' })).request.model).toBe('imagegen-qwen-image');
  });

  it('unknown model → 400 listing known models', () => {
    const e = thrown(() => t2i({ model: 'sd-xl' }));
    expect(e).toMatchObject({ status: 400, field: 'model' });
    const images = listImageProfiles().map((p) => p.id);
    for (const id of images) expect(e.message).toContain(id);
    expect((e.extra as { known: string[] }).known).toEqual(images);
    expect(thrown(() => t2i({ override_settings: { sd_model_checkpoint: 'nope' } }))).toMatchObject({
      status: 400,
      field: 'override_settings.sd_model_checkpoint',
    });
  });

  it('a bad configured default is a server error, not a 4xx', () => {
    const e = thrown(() => t2i({}, ctx({ defaultModel: 'nope' })));
    expect(e.status).toBeUndefined();
  });
});

describe('samplers and schedulers', () => {
  it.each([
    [{ sampler_name: 'Euler a' }, 'euler_ancestral', 'simple'],
    [{ sampler_name: 'DPM++ 2M Karras' }, 'dpmpp_2m', 'karras'],
    [{ sampler_name: 'DPM++ 2M', scheduler: 'karras' }, 'dpmpp_2m', 'karras'],
    [{ sampler_name: 'DPM++ 2M', scheduler: 'automatic' }, 'dpmpp_2m', 'simple'],
    [{ sampler_name: 'k_euler_a', scheduler: 'SGM Uniform' }, 'euler_ancestral', 'sgm_uniform'],
    [{ sample_method: 'euler_a', scheduler: 'discrete' }, 'euler_ancestral', 'normal'],
    [{ sampler_index: 'Heun' }, 'heun', 'simple'],
    [{ sampler_name: 'Euler a', sampler_index: 'Euler a' }, 'euler_ancestral', 'simple'],
    [{ sampler_name: '', sampler_index: 'LMS' }, 'lms', 'simple'],
    [{ sampler_name: 'res_multistep', scheduler: 'beta' }, 'res_multistep', 'beta'],
    [{ scheduler: 'ddim' }, 'euler', 'ddim_uniform'],
    [{ sampler_name: 'default' }, 'euler', 'simple'],
  ])('%j → %s/%s', (body, sampler, scheduler) => {
    const { request } = t2i(body);
    expect(request.sampler).toBe(sampler);
    expect(request.scheduler).toBe(scheduler);
  });

  it('omitted sampler → the model default, not A1111 "Euler"', () => {
    applyModelOverrides({ 'imagegen-qwen-image': { defaults: { sampler: 'res_multistep', scheduler: 'beta' } } });
    const { request } = t2i({ model: 'imagegen-qwen-image' });
    expect(request).toMatchObject({ sampler: 'res_multistep', scheduler: 'beta', report: { samplerName: 'res_multistep', scheduler: 'Beta' } });
  });

  it('report labels use A1111 names', () => {
    expect(t2i({ sampler_name: 'k_euler_a', scheduler: 'karras' }).request.report).toMatchObject({ samplerName: 'Euler a', scheduler: 'Karras' });
  });

  it('suffix scheduler wins over the scheduler field, with a warning', () => {
    const { request, warnings } = t2i({ sampler_name: 'DPM++ 2M Karras', scheduler: 'exponential' });
    expect(request.scheduler).toBe('karras');
    expect(warnings.some((w) => w.startsWith('scheduler:'))).toBe(true);
  });

  it.each([
    [{ sampler_name: 'Wibble' }, 'sampler_name'],
    [{ scheduler: 'wobbly' }, 'scheduler'],
    [{ sampler_name: 'Wibble Karras' }, 'sampler_name'],
  ])('%j → 400 naming %s and listing valid names', (body, field) => {
    const e = thrown(() => t2i(body));
    expect(e).toMatchObject({ status: 400, field });
    expect(e.message).toMatch(/valid (samplers|schedulers): /);
    expect(Array.isArray(e.extra?.valid)).toBe(true);
  });

  it.each([
    [{ sampler_name: 'PLMS' }, 'ipndm', undefined, /sampler_name: PLMS: ComfyUI has no PLMS/],
    [{ sampler_name: 'DDIM CFG++' }, 'euler_cfg_pp', undefined, /DDIM CFG\+\+/],
    [{ sample_method: 'tcd' }, 'lcm', undefined, /sample_method: ComfyUI has no TCD/],
    [{ sampler_index: 'Restart' }, 'heun', undefined, /Restart/],
    [{ scheduler: 'align_your_steps' }, 'euler', { node: 'OptimalStepsScheduler', modelType: 'FLUX' }, /scheduler: Align Your Steps: .*OptimalStepsScheduler/],
    [{ sampler_name: 'Euler Align Your Steps' }, 'euler', { node: 'OptimalStepsScheduler', modelType: 'FLUX' }, /OptimalStepsScheduler/],
  ])('%j: every name A1111 offers renders (closest match said in warnings)', (body, sampler, sigmas, warning) => {
    const r = t2i({ ...body, steps: 8 });
    expect(r.request.sampler).toBe(sampler);
    expect(r.request.sigmas).toEqual(sigmas);
    expect(r.warnings.join('\n')).toMatch(warning);
  });

  it('Polyexponential is a real ComfyUI schedule: no warning, reported by its label', () => {
    const r = t2i({ scheduler: 'Polyexponential', sampler_name: 'Euler' });
    expect(r.request.sigmas).toEqual({ node: 'PolyexponentialScheduler', sigmaMax: 1, sigmaMin: 0.001, rho: 1 });
    expect(r.request.report.scheduler).toBe('Polyexponential');
    expect(r.warnings.join('\n')).not.toMatch(/olyexponential/);
  });

  it('numeric sampler_index (SD.Next) is ignored with a warning', () => {
    const { request, warnings } = t2i({ sampler_index: 0 });
    expect(request.sampler).toBe('euler');
    expect(warnings[0]).toMatch(/^sampler_index:/);
  });
});

describe('seeds', () => {
  it('-1, absent and null → floor(random × 4294967294)', () => {
    expect(t2i({ seed: -1 }, ctx({ random: () => 0 })).request.seed).toBe(0);
    expect(t2i({}, ctx({ random: () => 0.999999999999 })).request.seed).toBe(4294967293);
    expect(t2i({ seed: null }, ctx({ random: () => 0.5 })).request.seed).toBe(2147483647);
  });

  it('explicit seeds are kept, up to 2^53-1 for the last image', () => {
    expect(t2i({ seed: 0 }).request.seed).toBe(0);
    expect(t2i({ seed: 123 }).request.seed).toBe(123);
    expect(t2i({ seed: '4294967295' }).request.seed).toBe(4294967295);
    expect(t2i({ seed: Number.MAX_SAFE_INTEGER }).request.seed).toBe(Number.MAX_SAFE_INTEGER);
    expect(t2i({ seed: Number.MAX_SAFE_INTEGER - 2, batch_size: 3 }).request.seed).toBe(Number.MAX_SAFE_INTEGER - 2);
  });

  it.each([[-2], [-100], [2 ** 53], [1.8e19]])('seed %d → 400 seed', (seed) => {
    expect(thrown(() => t2i({ seed }))).toMatchObject({ status: 400, field: 'seed' });
  });

  it('seed + i beyond 2^53-1 → 400 seed', () => {
    expect(thrown(() => t2i({ seed: Number.MAX_SAFE_INTEGER - 1, batch_size: 3 }))).toMatchObject({ status: 400, field: 'seed' });
  });

  it('"abc" → 422 seed', () => {
    expect(thrown(() => t2i({ seed: 'abc' }))).toMatchObject({ status: 422, field: 'seed' });
  });
});

describe('sizes', () => {
  it('absent → 512×512', () => {
    expect(t2i({}).request).toMatchObject({ width: 512, height: 512 });
  });

  it('multiples of 16 stay; multiples of 8 snap up to the 16 grid with a warning and the requested size reported', () => {
    expect(t2i({ width: 1024, height: 768 }).request).toMatchObject({ width: 1024, height: 768 });
    const { request, warnings } = t2i({ width: 520, height: 1000 });
    expect(request).toMatchObject({ width: 528, height: 1008, report: { requestedWidth: 520, requestedHeight: 1000 } });
    expect(warnings).toHaveLength(2);
  });

  it('any integer size renders: snapped to the 16 px grid (halfway up), at least the model minimum, with a warning', () => {
    const cases: [number, number, number, number][] = [
      [960, 540, 960, 544],
      [1366, 768, 1360, 768],
      [500, 500, 496, 496],
      [1000, 1000, 1008, 1008],
      [513, 56, 512, 64],
    ];
    for (const [w, h, ew, eh] of cases) {
      const { request, warnings } = t2i({ width: w, height: h });
      expect(request).toMatchObject({ width: ew, height: eh, report: { requestedWidth: w, requestedHeight: h } });
      expect(warnings.filter((x) => /snapped/.test(x))).toHaveLength((w !== ew ? 1 : 0) + (h !== eh ? 1 : 0));
    }
  });

  it('a configured pixel budget replaces the model one', () => {
    const c = { ...ctx(), limits: { ...LIMITS, maxRenderPixels: 512 * 512 } };
    expect(t2i({ width: 512, height: 512 }, c).request.width).toBe(512);
    const fitted = t2i({ width: 1024, height: 512 }, c);
    expect(fitted.request).toMatchObject({ width: 720, height: 352 });
    expect(fitted.warnings.join('\n')).toMatch(/1024x512 scaled down to 720x352 \(keeping the aspect ratio\)/);
    // Refused only when not even the smallest grid size fits.
    const tiny = { ...ctx(), limits: { ...LIMITS, maxRenderPixels: 100 } };
    expect(thrown(() => t2i({ width: 64, height: 64 }, tiny))).toMatchObject({ status: 400, field: 'width' });
  });

  it.each([
    [{ height: 0 }, 'height'],
    [{ height: -512 }, 'height'],
  ])('%j → 400 %s', (body, field) => {
    expect(thrown(() => t2i(body))).toMatchObject({ status: 400, field });
  });

  it('too many pixels or too long a side: scaled down keeping the aspect, said; the pixel limit itself is allowed', () => {
    expect(t2i({ width: 2048, height: 1152 }).request).toMatchObject({ width: 2048, height: 1152 });
    expect(t2i({ width: 1536, height: 1536 }).request).toMatchObject({ width: 1536, height: 1536 });
    const square = t2i({ width: 2048, height: 2048 });
    expect(square.request).toMatchObject({ width: 1536, height: 1536 });
    expect(square.warnings.join('\n')).toMatch(/2048x2048 scaled down to 1536x1536/);
    const tall = t2i({ height: 2048, width: 1536 }).request;
    expect(tall.width * tall.height).toBeLessThanOrEqual(2048 * 1152);
    expect(tall.height / tall.width).toBeCloseTo(2048 / 1536, 1);
    const wide = t2i({ width: 4096, height: 512 }).request;
    expect(wide.width).toBeLessThanOrEqual(2048);
    expect(wide.width / wide.height).toBeCloseTo(8, 0);
  });
});

describe('batches', () => {
  it("batch_size × n_iter; batch_count is sd-server's n_iter", () => {
    expect(t2i({ batch_size: 2, n_iter: 3 }).request).toMatchObject({ batchSize: 2, nIter: 3 });
    expect(t2i({ batch_count: 4 }).request).toMatchObject({ batchSize: 1, nIter: 4 });
    expect(t2i({ n_iter: 2, batch_count: 4 }).request).toMatchObject({ nIter: 2 });
  });

  it.each([
    [{ batch_size: 9 }, 'batch_size'],
    [{ batch_size: 3, n_iter: 3 }, 'batch_size'],
    [{ batch_size: 0 }, 'batch_size'],
    [{ n_iter: 0 }, 'n_iter'],
    [{ batch_count: -1 }, 'batch_count'],
  ])('%j → 400 %s', (body, field) => {
    expect(thrown(() => t2i(body))).toMatchObject({ status: 400, field });
  });
});

describe('the SD upscale script (A1111 test_img2img_sd_upscale_performed)', () => {
  // A1111's own API suite posts exactly this: script_args [info, overlap, upscaler, scale].
  const body = { init_images: [img], width: 64, height: 64, denoising_strength: 0.75, script_name: 'sd upscale', script_args: ['', 8, 'Lanczos', 2.0] };

  it('renders the init image × scale as an img2img, the tiles it does not use said in warnings', () => {
    const { request, warnings } = i2i(body);
    expect(request).toMatchObject({
      kind: 'img2img',
      width: 128,
      height: 128,
      denoise: 0.75,
      sdUpscale: { scale: 2, overlap: 8, upscaler: { kind: 'pixel', method: 'lanczos' }, upscalerName: 'Lanczos' },
    });
    expect(request.report).toMatchObject({ requestedWidth: 128, requestedHeight: 128 });
    expect(warnings).toContainEqual(expect.stringMatching(/^script_name: SD upscale redraws the whole ×2 image in one img2img pass.*overlap 8 not used/));
  });

  it('A1111 defaults (overlap 64, ×2, upscaler "None": the image keeps its size, as A1111), an upscaler index, a model, a budget fit', () => {
    const dflt = i2i({ init_images: [img], script_name: 'SD upscale' });
    expect(dflt.request).toMatchObject({ width: 64, height: 64, sdUpscale: { scale: 1, overlap: 64, upscalerName: 'None' } });
    expect(dflt.warnings).toContainEqual(expect.stringMatching(/^script_args\.2: upscaler None keeps the image at its size/));
    expect(i2i({ ...body, script_args: ['', 8, 'Lanczos', 2] }).request).toMatchObject({ width: 128, height: 128, sdUpscale: { scale: 2 } });
    expect(i2i({ ...body, script_args: ['', 8, 2, 2] }).request.sdUpscale?.upscalerName).toBe('Nearest');
    const model = i2i({ ...body, script_args: [null, 8, '4x-UltraSharp', 4] }, ctx({ catalog: { upscaleModels: ['4x-UltraSharp.pth'] } })).request;
    expect(model).toMatchObject({ width: 256, height: 256, sdUpscale: { upscaler: { kind: 'model', model: '4x-UltraSharp.pth' } } });
    const big = i2i({ ...body, init_images: [pngB64(1024, 1024)] });
    expect(big.request).toMatchObject({ width: 1536, height: 1536 });
    expect(big.warnings).toContainEqual(expect.stringMatching(/^script_args\.3: 2048x2048 scaled down to 1536x1536/));
  });

  it('an upscaler index past the pixel methods picks that model file, even where two files share a stem or a stem reads like a method', () => {
    const lists = { upscaleModels: ['a/4x.pth', 'b/4x.safetensors', 'bicubic.pth'] };
    const pick = (i: number) => i2i({ ...body, script_args: ['', 8, i, 2] }, ctx({ catalog: lists })).request.sdUpscale?.upscaler;
    expect(pick(6)).toEqual({ kind: 'model', model: 'a/4x.pth' });
    expect(pick(7)).toEqual({ kind: 'model', model: 'b/4x.safetensors' });
    expect(pick(8)).toEqual({ kind: 'model', model: 'bicubic.pth' });
    expect(thrown(() => i2i({ ...body, script_args: ['', 8, 9, 2] }, ctx({ catalog: lists })))).toMatchObject({ status: 422, field: 'script_args.2' });
  });

  it('an upscale model runs only to enlarge: an output no larger than the init image is a Lanczos resize, said in warnings', () => {
    const lists = { catalog: { upscaleModels: ['4x-UltraSharp.pth'] } };
    const enlarged = i2i({ ...body, script_args: [null, 8, '4x-UltraSharp', 2] }, ctx(lists));
    expect(enlarged.request.sdUpscale?.upscaler).toEqual({ kind: 'model', model: '4x-UltraSharp.pth' });
    const shrunk = i2i({ ...body, init_images: [pngB64(2048, 2048)], script_args: [null, 8, '4x-UltraSharp', 1] }, ctx(lists));
    expect(shrunk.request).toMatchObject({ width: 1536, height: 1536, sdUpscale: { upscaler: { kind: 'pixel', method: 'lanczos' } } });
    expect(shrunk.warnings).toContainEqual(expect.stringMatching(/^script_args\.2: the output \(1536x1536\) is not larger than the init image \(2048x2048\)/));
  });

  it('issue 27 H2: a sliver init "enlarged" by 2 runs no upscale model on its whole (3.2 Mpx here, 16 Mpx in the report) (bounded by the output, not the input)', () => {
    const lists = { catalog: { upscaleModels: ['4x-UltraSharp.pth'] } };
    const sliver = i2i({ ...body, init_images: [pngB64(8, 400_000)], script_args: ['', 64, '4x-UltraSharp', 2] }, ctx(lists));
    expect(sliver.request.sdUpscale?.upscaler).toEqual({ kind: 'pixel', method: 'lanczos' });
    expect(sliver.request.width * sliver.request.height).toBeLessThan(8 * 400_000);
  });

  it('one image per n_iter, as A1111 (its batch_size groups tiles), said when batch_size is set', () => {
    const { request, warnings } = i2i({ ...body, batch_size: 3, n_iter: 2, seed: 10 });
    expect(request).toMatchObject({ batchSize: 1, nIter: 2, seed: 10 });
    expect(warnings).toContainEqual(expect.stringMatching(/^batch_size: 3 not used; SD upscale answers one image per n_iter/));
  });

  it.each([
    [{ script_args: ['', 8, 'Lanczos', 0] }, 422, 'script_args.3'],
    [{ script_args: ['', 8, 'Lanczos', 'big'] }, 422, 'script_args.3'],
    [{ script_args: ['', 8, 99, 2] }, 422, 'script_args.2'],
    [{ script_args: ['', 8, 'no-such-upscaler', 2] }, 400, 'script_args.2'],
    [{ mask: img }, 422, 'mask'],
  ])('%j → %d %s', (over, status, field) => {
    expect(thrown(() => i2i({ ...body, ...over }))).toMatchObject({ status, field });
  });

  it('is an img2img script: on txt2img, or on an edit model, it is refused naming script_name', () => {
    expect(thrown(() => t2i({ script_name: 'sd upscale' }))).toMatchObject({ status: 422, field: 'script_name' });
    expect(thrown(() => i2i({ ...body, model: 'imagegen-flux-kontext' }))).toMatchObject({ status: 422, field: 'script_name' });
  });
});

describe('other ranges and types', () => {
  it('steps 0 means the model default', () => {
    expect(t2i({ steps: 0 }).request.steps).toBe(20);
  });

  it.each([
    [{ steps: 1000 }, 400, 'steps'],
    [{ model: 'imagegen-qwen-image', cfg_scale: -1 }, 400, 'cfg_scale'],
    [{ distilled_cfg_scale: 500 }, 400, 'distilled_cfg_scale'],
    [{ steps: 'many' }, 422, 'steps'],
    [{ prompt: ['a'] }, 422, 'prompt'],
    [{ script_name: 'X/Y/Z plot' }, 422, 'script_name'],
  ])('%j → %d %s', (body, status, field) => {
    expect(thrown(() => t2i(body))).toMatchObject({ status, field });
  });

  it('a non-object body → 422', () => {
    expect(thrown(() => normalizeRequest('txt2img', [1], ctx()))).toMatchObject({ status: 422, field: '' });
    expect(thrown(() => normalizeRequest('txt2img', 'x', ctx()))).toMatchObject({ status: 422 });
    expect(thrown(() => normalizeRequest('txt2img', null, ctx()))).toMatchObject({ status: 422 });
  });

  it('422 lists every type problem', () => {
    const e = thrown(() => t2i({ steps: 'x', width: 'y' }));
    expect(e.field).toBe('steps');
    expect(e.extra?.issues).toHaveLength(2);
    expect(e.message).toMatch(/^steps: expected an integer, got "x"/);
  });

  it('ignored A1111 features are warnings (SillyTavern / webuiapi bodies pass)', () => {
    const st = {
      url: 'http://127.0.0.1:7860',
      auth: '',
      prompt: 'cat',
      negative_prompt: '',
      sampler_name: 'Euler a',
      scheduler: 'automatic',
      steps: 20,
      cfg_scale: 7,
      width: 512,
      height: 768,
      restore_faces: false,
      enable_hr: false,
      hr_upscaler: 'Latent',
      hr_scale: 2,
      denoising_strength: 0.7,
      hr_second_pass_steps: 0,
      override_settings: { CLIP_stop_at_last_layers: 1 },
      override_settings_restore_afterwards: true,
      clip_skip: 1,
      save_images: true,
      send_images: true,
      do_not_save_grid: false,
      do_not_save_samples: false,
    };
    const { request } = t2i(st);
    expect(request).toMatchObject({ sampler: 'euler_ancestral', scheduler: 'simple', width: 512, height: 768, steps: 20, denoise: 1 });
    const w = t2i({
      restore_faces: true,
      styles: ['s'],
      subseed_strength: 0.5,
      alwayson_scripts: { ADetailer: { args: [] } },
      override_settings: { sd_vae: 'x.vae' },
    }).warnings;
    expect(w).toHaveLength(5);
    expect(w.join('\n')).toMatch(/override_settings.sd_vae: not applied/);
  });
});

describe('what users tweak', () => {
  const catalog = { loras: ['style/Detail-Tweaker.safetensors', 'film.safetensors'], upscaleModels: ['4x-UltraSharp.pth'] };
  const c = () => ({ ...ctx(), catalog });

  it('LoRA tags resolve to ComfyUI files, are stripped from the prompt, and keep their weights', () => {
    const { request } = t2i({ prompt: 'a cat <lora:detail-tweaker:0.6>, <lora:film:0.5:0.8> at night', width: 512, height: 512 }, c());
    expect(request.prompt).toBe('a cat, at night');
    expect(request.loras).toEqual([
      { file: 'style/Detail-Tweaker.safetensors', name: 'detail-tweaker', model: 0.6, clip: 0.6 },
      { file: 'film.safetensors', name: 'film', model: 0.8, clip: 0.5 },
    ]);
  });

  it('an unknown LoRA is a 400 naming it', () => {
    const e = thrown(() => t2i({ prompt: 'x <lora:nope:1>' }, c()));
    expect(e).toMatchObject({ status: 400, field: 'prompt' });
    expect(e.message).toMatch(/unknown LoRA "nope".*Detail-Tweaker/);
  });

  it('hires fix: scale or resize, snapped, second-pass steps and denoise, upscaler by A1111 name', () => {
    const a = t2i({ enable_hr: true, hr_scale: 2, width: 256, height: 256, hr_upscaler: 'Latent (bicubic)', denoising_strength: 0.5 }, c()).request;
    expect(a.hires).toEqual({
      width: 512,
      height: 512,
      upscaler: { kind: 'latent', method: 'bicubic' },
      upscalerName: 'Latent (bicubic)',
      steps: 20,
      denoise: 0.5,
    });
    const b = t2i({ enable_hr: true, hr_resize_x: 1000, width: 500, height: 250, hr_upscaler: '4x-UltraSharp', hr_second_pass_steps: 7 }, c()).request;
    expect(b.hires).toMatchObject({ width: 1008, height: 512, upscaler: { kind: 'model', model: '4x-UltraSharp.pth' }, steps: 7, denoise: 0.7 });
    expect(t2i({ enable_hr: true, hr_upscaler: 'Lanczos' }, c()).request.hires?.upscaler).toEqual({ kind: 'pixel', method: 'lanczos' });
    expect(thrown(() => t2i({ enable_hr: true, hr_upscaler: 'SwinIR 9x' }, c()))).toMatchObject({ status: 400, field: 'hr_upscaler' });
    // Over the budget (SillyTavern's ×2 of 1024²): fitted keeping the aspect, said.
    const big = t2i({ enable_hr: true, hr_scale: 2, width: 1024, height: 1024 }, c());
    expect(big.request.hires).toMatchObject({ width: 1536, height: 1536 });
    expect(big.warnings.join('\n')).toMatch(/hr_scale: 2048x2048 scaled down to 1536x1536/);
    const wide = t2i({ enable_hr: true, hr_scale: 2, width: 1344, height: 768 }, c()).request.hires!;
    expect(wide.width * wide.height).toBeLessThanOrEqual(2048 * 1152);
    expect(wide.width / wide.height).toBeCloseTo(1344 / 768, 1);
  });

  it('resize_mode 0-3 on img2img; anything else is a 400', () => {
    expect(i2i({ init_images: [img], resize_mode: 2 }).request.resizeMode).toBe(2);
    expect(i2i({ init_images: [img] }).request.resizeMode).toBeUndefined();
    expect(thrown(() => i2i({ init_images: [img], resize_mode: 4 }))).toMatchObject({ status: 400, field: 'resize_mode' });
  });

  it('samples_format from override_settings or options, with the A1111 quality options', () => {
    expect(t2i({ override_settings: { samples_format: 'jpg', jpeg_quality: 90 } }).request.output).toEqual({ format: 'jpeg', quality: 90, lossless: false });
    expect(t2i({}, { ...ctx(), options: { samples_format: 'webp', webp_lossless: true } }).request.output).toEqual({
      format: 'webp',
      quality: 80,
      lossless: true,
    });
    expect(t2i({ override_settings: { samples_format: 'png' } }).request.output).toBeUndefined();
  });
});

describe('img2img and inpaint', () => {
  it('init image decoded, denoise default 0.75, image returned for storage', () => {
    const { request, images } = i2i({ init_images: [img] });
    expect(request.kind).toBe('img2img');
    expect(request.denoise).toBe(0.75);
    expect(request.initImage).toMatchObject({ mime: 'image/png', width: 64, height: 64 });
    expect(images).toHaveLength(1);
    expect(images[0]!.ref).toEqual(request.initImage);
  });

  it('denoising_strength applies and is range-checked', () => {
    expect(i2i({ init_images: [img], denoising_strength: 0.3 }).request.denoise).toBe(0.3);
    expect(thrown(() => i2i({ init_images: [img], denoising_strength: 1.5 }))).toMatchObject({ status: 400, field: 'denoising_strength' });
  });

  it('mask → normalised greyscale mask blob; inpainting_mask_invert honoured', () => {
    const mask = makePngWith(4, 4, (x) => (x < 2 ? [255, 255, 255, 255] : [0, 0, 0, 255])).toString('base64');
    const a = i2i({ init_images: [img], mask });
    const b = i2i({ init_images: [img], mask, inpainting_mask_invert: 1 });
    expect(a.request.mask).toBeDefined();
    expect(a.request.mask!.sha256).not.toBe(b.request.mask!.sha256);
    expect(a.images).toHaveLength(2);
  });

  it('no init image → 404 "Init image not found" (A1111)', () => {
    for (const body of [{}, { init_images: [] }, { init_images: null }]) {
      const e = thrown(() => i2i(body));
      expect(e).toMatchObject({ status: 404, field: 'init_images' });
      expect(e.message).toMatch(/^Init image not found/);
    }
  });

  it.each([
    [{ init_images: ['not-base64!'] }, 400, 'init_images.0'],
    [{ init_images: [Buffer.from('plain text').toString('base64')] }, 400, 'init_images.0'],
    [{ init_images: ['https://example.com/a.png'] }, 400, 'init_images.0'],
    [{ init_images: [img], mask: 'zzz' }, 400, 'mask'],
    [{ init_images: [img, img] }, 400, 'init_images'],
    [{ init_images: [img, 5] }, 422, 'init_images.1'],
  ])('bad images %# → %d %s', (body, status, field) => {
    expect(thrown(() => i2i(body))).toMatchObject({ status, field });
  });

  it('413 for images over the limits', () => {
    const big = makePng(300, 300).toString('base64');
    expect(thrown(() => i2i({ init_images: [big] }, ctx({ limits: { ...LIMITS, maxImagePixels: 10_000 } })))).toMatchObject({
      status: 413,
      field: 'init_images.0',
    });
    expect(thrown(() => i2i({ init_images: [big] }, ctx({ limits: { ...LIMITS, maxImageBytes: 50 } })))).toMatchObject({
      status: 413,
      field: 'init_images.0',
    });
  });

  it('cheap checks fail before images are decoded', () => {
    expect(thrown(() => i2i({ init_images: ['garbage!'], width: 0 }))).toMatchObject({ field: 'width' });
  });

  it('txt2img ignores init_images and mask (A1111 has no such fields there)', () => {
    expect(t2i({ init_images: [img], mask: img }).request.kind).toBe('txt2img');
  });
});

describe('edit routing by capability', () => {
  it('txt2img + extra_images on an edit model → edit with those references', () => {
    const { request, images } = t2i({ model: 'imagegen-qwen-image-edit', prompt: 'make it red', extra_images: [img, img2] });
    expect(request.kind).toBe('edit');
    expect(request.extraImages).toHaveLength(2);
    expect(request.initImage).toBeUndefined();
    expect(request.denoise).toBe(1);
    expect(images).toHaveLength(2);
  });

  it('img2img + extra_images on an edit model → init image is the first reference', () => {
    const { request, images } = i2i({ model: 'imagegen-flux-kontext', init_images: [img], extra_images: [img2] });
    expect(request.kind).toBe('edit');
    expect(request.extraImages.map((r) => r.width)).toEqual([64, 32]);
    expect(request.initImage).toBeUndefined();
    expect(images).toHaveLength(2);
  });

  it('identical images are stored once', () => {
    const { request, images } = t2i({ model: 'imagegen-qwen-image-edit', extra_images: [img, img] });
    expect(request.extraImages).toHaveLength(2);
    expect(images).toHaveLength(1);
  });

  it('data: URLs accepted in extra_images', () => {
    expect(t2i({ model: 'imagegen-flux-kontext', extra_images: [`data:image/png;base64,${img}`] }).request.kind).toBe('edit');
  });

  it('edit model from a standard client: txt2img renders text-to-image, img2img init_images are the edit source', () => {
    for (const model of ['imagegen-qwen-image-edit', 'imagegen-flux-kontext']) {
      const t = t2i({ model, prompt: 'a red cube' });
      expect(t.request).toMatchObject({ kind: 'txt2img', model, extraImages: [] });
      const e = i2i({ model, prompt: 'make it blue', init_images: [img], denoising_strength: 0.4 });
      expect(e.request.kind).toBe('edit');
      expect(e.request.extraImages).toHaveLength(1);
      expect(e.request.initImage).toBeUndefined();
      expect(e.warnings.join('\n')).toMatch(/edit source/);
      expect(e.warnings.join('\n')).toMatch(/denoising_strength: 0.4 not applied/);
      expect(i2i({ model, init_images: [img], extra_images: [img2] }).request.extraImages).toHaveLength(2);
      expect(thrown(() => i2i({ model, init_images: [img], mask: img }))).toMatchObject({ status: 400, field: 'mask' });
    }
  });

  it('extra_images on a model that cannot use them → 400 extra_images', () => {
    expect(thrown(() => t2i({ model: 'imagegen-flux-dev', extra_images: [img] }))).toMatchObject({ status: 400, field: 'extra_images' });
    expect(thrown(() => i2i({ model: 'imagegen-qwen-image', init_images: [img], extra_images: [img] }))).toMatchObject({
      status: 400,
      field: 'extra_images',
    });
  });

  it('too many references → 400 extra_images (model limit and configured limit)', () => {
    expect(thrown(() => t2i({ model: 'imagegen-qwen-image-edit', extra_images: [img, img, img, img] }))).toMatchObject({
      status: 400,
      field: 'extra_images',
    });
    expect(thrown(() => i2i({ model: 'imagegen-qwen-image-edit', init_images: [img], extra_images: [img, img, img] }))).toMatchObject({
      status: 400,
      field: 'extra_images',
    });
    expect(thrown(() => t2i({ model: 'imagegen-flux-kontext', extra_images: [img, img] }, ctx({ limits: { ...LIMITS, maxExtraImages: 1 } })))).toMatchObject({
      status: 400,
      field: 'extra_images',
    });
  });

  it('bad reference image → its index', () => {
    expect(thrown(() => t2i({ model: 'imagegen-qwen-image-edit', extra_images: [img, 'bad!!'] }))).toMatchObject({
      status: 400,
      field: 'extra_images.1',
    });
    expect(thrown(() => i2i({ model: 'imagegen-qwen-image-edit', init_images: ['bad!!'], extra_images: [img] }))).toMatchObject({
      status: 400,
      field: 'init_images.0',
    });
  });

  it('a mask on an edit → 400 mask', () => {
    expect(thrown(() => i2i({ model: 'imagegen-flux-kontext', init_images: [img], extra_images: [img], mask: img }))).toMatchObject({
      status: 400,
      field: 'mask',
    });
  });
});

describe('parameters', () => {
  it('echo keeps seed -1 and drops images', () => {
    const { parameters } = i2i({ init_images: [img], seed: -1, mask: img });
    expect(parameters.seed).toBe(-1);
    expect(parameters.init_images).toBeNull();
    expect(parameters.mask).toBeNull();
    expect(parameters.steps).toBe(20);
    expect(parameters.denoising_strength).toBe(0.75);
  });
});
