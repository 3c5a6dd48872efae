import { describe, expect, it } from 'vitest';
import { RequestError, toA1111ErrorBody } from '../../src/api/a1111/errors.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { buildInfo, buildParameters, infotextFor, jobTimestamp } from '../../src/api/a1111/response.ts';
import { ctx, pngB64 } from '../golden/helpers.ts';

const resolve = (body: Record<string, unknown>, route: 'txt2img' | 'img2img' = 'txt2img') => normalizeRequest(route, body, ctx()).request;

describe('infotext', () => {
  it('A1111 format, Flux', () => {
    const r = resolve({ prompt: 'a red fox', seed: 123 });
    expect(infotextFor(r, 0)).toBe(
      'a red fox\nSteps: 20, Sampler: Euler, Schedule type: Simple, CFG scale: 1, Distilled CFG Scale: 3.5, Seed: 123, Size: 512x512, Model: imagegen-flux-dev',
    );
    expect(infotextFor(r, 2)).toContain('Seed: 125,');
  });

  it('negative prompt line, img2img denoise, quoting of values with separators', () => {
    const r = resolve({ model: 'imagegen-qwen-image', prompt: 'p', negative_prompt: 'n', seed: 1, sampler_name: 'DPM++ 2M Karras' });
    expect(infotextFor(r, 0)).toBe(
      'p\nNegative prompt: n\nSteps: 40, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 2.5, Seed: 1, Size: 512x512, Model: imagegen-qwen-image',
    );
    const i = resolve({ prompt: 'p', seed: 1, init_images: [pngB64()], denoising_strength: 0.5 }, 'img2img');
    expect(infotextFor(i, 0)).toMatch(/Model: imagegen-flux-dev, Denoising strength: 0.5$/);
    const q = { ...r, report: { ...r.report, samplerName: 'a, b: c' } };
    expect(infotextFor(q, 0)).toContain('Sampler: "a, b: c",');
  });

  it('is deterministic: identical requests give identical infotexts', () => {
    const body = { prompt: 'x', seed: 42, batch_size: 2 };
    expect(infotextFor(resolve(body), 1)).toBe(infotextFor(resolve(body), 1));
  });
});

describe('info', () => {
  it('JSON string with the A1111 keys, all_seeds = seed + i, actual size, render id', () => {
    const r = resolve({ prompt: 'cat', seed: 7, batch_size: 2, n_iter: 2, width: 520 });
    const info = JSON.parse(buildInfo(r, undefined, { renderId: 'render-xyz', startedAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 5)) }));
    for (const k of [
      'prompt',
      'all_prompts',
      'negative_prompt',
      'all_negative_prompts',
      'seed',
      'all_seeds',
      'subseed',
      'all_subseeds',
      'subseed_strength',
      'width',
      'height',
      'sampler_name',
      'cfg_scale',
      'steps',
      'batch_size',
      'restore_faces',
      'sd_model_name',
      'sd_model_hash',
      'seed_resize_from_w',
      'seed_resize_from_h',
      'denoising_strength',
      'extra_generation_params',
      'index_of_first_image',
      'infotexts',
      'styles',
      'job_timestamp',
      'clip_skip',
      'is_using_inpainting_conditioning',
      'version',
      'render_id',
    ]) {
      expect(info).toHaveProperty(k);
    }
    expect(info).toMatchObject({
      prompt: 'cat',
      seed: 7,
      all_seeds: [7, 8, 9, 10],
      all_prompts: ['cat', 'cat', 'cat', 'cat'],
      width: 528,
      height: 512,
      sampler_name: 'Euler',
      cfg_scale: 1,
      steps: 20,
      batch_size: 2,
      sd_model_name: 'imagegen-flux-dev',
      index_of_first_image: 0,
      job_timestamp: '20250102030405',
      render_id: 'render-xyz',
      denoising_strength: null,
      extra_generation_params: { 'Schedule type': 'Simple', 'Distilled CFG Scale': 3.5 },
    });
    expect(info.infotexts).toHaveLength(4);
    expect(info.infotexts[3]).toContain('Seed: 10,');
    expect(info.infotexts[3]).toContain('Size: 528x512');
  });

  it('seeds from the result win; warnings reported', () => {
    const r = resolve({ seed: 7 });
    const info = JSON.parse(buildInfo(r, { seeds: [99] }, { renderId: 'r', warnings: ['w'] }));
    expect(info.seed).toBe(99);
    expect(info.all_seeds).toEqual([99]);
    expect(info.warnings).toEqual(['w']);
  });

  it('jobTimestamp', () => {
    expect(jobTimestamp(new Date(Date.UTC(2024, 11, 31, 23, 59, 58)))).toBe('20241231235958');
  });
});

describe('parameters', () => {
  it('txt2img: every A1111 field, seed as sent, used values for omitted steps/cfg/sampler', () => {
    const body = { prompt: 'x', seed: -1, url: 'ignored' };
    const r = resolve(body);
    const p = buildParameters('txt2img', body, r);
    expect(p).toMatchObject({
      prompt: 'x',
      seed: -1,
      steps: 20,
      cfg_scale: 1,
      width: 512,
      height: 512,
      sampler_name: 'Euler',
      scheduler: 'Simple',
      batch_size: 1,
      n_iter: 1,
      send_images: true,
      save_images: false,
      enable_hr: false,
      model: 'imagegen-flux-dev',
      distilled_cfg_scale: 3.5,
    });
    expect(p).not.toHaveProperty('url');
    expect(p).not.toHaveProperty('init_images');
  });

  it('values as sent win (cfg_scale 7 on Flux is echoed, the render used 1)', () => {
    const body = { cfg_scale: 7, steps: '12', width: 520 };
    const p = buildParameters('txt2img', body, resolve(body));
    expect(p).toMatchObject({ cfg_scale: 7, steps: 12, width: 520 });
  });

  it('img2img: images echoed only with include_init_images', () => {
    const img = pngB64();
    const body = { init_images: [img], mask: img };
    expect(buildParameters('img2img', body)).toMatchObject({ init_images: null, mask: null, denoising_strength: 0.75, inpainting_fill: 0 });
    expect(buildParameters('img2img', { ...body, include_init_images: true })).toMatchObject({ init_images: [img], mask: img });
  });

  it('without a request: plain A1111 defaults; seed omitted → -1', () => {
    const p = buildParameters('txt2img', {});
    expect(p).toMatchObject({ seed: -1, steps: null, sampler_index: 'Euler' });
  });
});

describe('error body', () => {
  it('A1111 envelope with the field', () => {
    const e = new RequestError(400, 'init_images.0', 'init_images.0: not valid base64');
    expect(toA1111ErrorBody(e)).toEqual({
      error: 'HTTPException',
      detail: 'init_images.0: not valid base64',
      body: '',
      errors: 'init_images.0: not valid base64',
      field: 'init_images.0',
    });
  });

  it('extras kept; several issues listed in errors', () => {
    const e = new RequestError(422, 'steps', 'steps: bad', { issues: ['steps: bad', 'width: bad'] });
    expect(toA1111ErrorBody(e)).toMatchObject({ detail: 'steps: bad', errors: 'steps: bad; width: bad', issues: ['steps: bad', 'width: bad'] });
    expect(e.status).toBe(422);
    expect(e).toBeInstanceOf(Error);
  });
});
