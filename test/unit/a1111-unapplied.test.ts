/**
 * Every field of the A1111 request schema is applied, without effect by design, or named in info.warnings
 * when its value would change what A1111 renders: this walks the schema, so a new field without a decision
 * fails here.
 */
import { describe, expect, it } from 'vitest';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { schemaFor } from '../../src/api/a1111/schema.ts';
import { APPLIED_FIELDS, NO_EFFECT_FIELDS, UNAPPLIED_FIELDS } from '../../src/api/a1111/unapplied.ts';
import { ctx, makePngWith, pngB64 } from '../golden/helpers.ts';

/** A value of each unapplied field that A1111 would act on. */
const ACTIVE: Record<string, unknown> = {
  styles: ['Cinematic'],
  subseed_strength: 0.3,
  seed_resize_from_h: 768,
  seed_resize_from_w: 768,
  restore_faces: true,
  tiling: true,
  eta: 0.5,
  s_churn: 0.5,
  s_tmin: 0.2,
  s_tmax: 10,
  s_noise: 1.003,
  s_min_uncond: 0.5,
  refiner_checkpoint: 'sdxl-refiner',
  refiner_switch_at: 0.8,
  firstpass_image: pngB64(64, 64),
  force_task_id: 'task(abc)',
  alwayson_scripts: { ADetailer: { args: [] } },
  infotext: 'a cat\nSteps: 20',
  clip_skip: 2,
  firstphase_width: 512,
  firstphase_height: 512,
  image_cfg_scale: 1.5,
  initial_noise_multiplier: 1.05,
  latent_mask: pngB64(64, 64),
  include_init_images: true,
};

const img = pngB64(64, 64);
const mask = makePngWith(64, 64, (x) => (x < 32 ? [255, 255, 255, 255] : [0, 0, 0, 255])).toString('base64');
const base = { prompt: 'a fox', width: 64, height: 64, steps: 4, sampler_name: 'Euler a' };

describe('every A1111 request field is applied or said to be ignored', () => {
  for (const route of ['txt2img', 'img2img'] as const) {
    const keys = Object.keys(schemaFor(route).shape);
    const classified = new Set([...APPLIED_FIELDS.common, ...APPLIED_FIELDS[route], ...NO_EFFECT_FIELDS, ...Object.keys(UNAPPLIED_FIELDS)]);

    it(`${route}: every schema field is classified`, () => {
      expect(keys.filter((k) => !classified.has(k))).toEqual([]);
    });

    const body = route === 'img2img' ? { ...base, init_images: [img] } : base;
    for (const field of keys.filter((k) => k in UNAPPLIED_FIELDS)) {
      it(`${route}: ${field} with an active value is named in warnings`, () => {
        expect(ACTIVE, `no active value for ${field}`).toHaveProperty(field);
        const extra = field.startsWith('s_t') || field === 'refiner_switch_at' ? { s_churn: 0.5, refiner_checkpoint: 'sdxl-refiner' } : {};
        const { warnings } = normalizeRequest(route, { ...body, ...extra, [field]: ACTIVE[field] }, ctx());
        expect(
          warnings.some((w) => w.startsWith(`${field}:`)),
          warnings.join('\n'),
        ).toBe(true);
      });
    }
  }

  it("A1111's and webuiapi's default values are no warnings", () => {
    const defaults = {
      eta: 1,
      s_churn: 0,
      s_tmax: 0,
      s_tmin: 0,
      s_noise: 1,
      s_min_uncond: 0,
      styles: [],
      subseed_strength: 0,
      seed_resize_from_h: -1,
      seed_resize_from_w: -1,
      restore_faces: false,
      tiling: false,
      firstphase_width: 0,
      firstphase_height: 0,
      refiner_switch_at: null,
      clip_skip: 1,
    };
    expect(normalizeRequest('txt2img', { ...base, ...defaults }, ctx()).warnings).toEqual([]);
  });

  it('inpaint: mask_blur applied; inpainting_fill other than original and inpaint_full_res named', () => {
    const r = normalizeRequest(
      'img2img',
      { ...base, init_images: [img], mask, mask_blur: 8, inpainting_fill: 0, inpaint_full_res: true, inpaint_full_res_padding: 32 },
      ctx(),
    );
    expect(r.request.inpaint).toEqual({ maskBlur: 8 });
    expect(r.warnings.join('\n')).toMatch(/inpainting_fill: 0 \(fill\) not applied/);
    expect(r.warnings.join('\n')).toMatch(/inpaint_full_res: not applied/);
    const plain = normalizeRequest('img2img', { ...base, init_images: [img], mask, inpainting_fill: 1 }, ctx());
    expect(plain.request.inpaint).toEqual({ maskBlur: 4 });
    expect(plain.warnings).toEqual([]);
  });
});

describe('upscaler names in the infotext', () => {
  it('"Lanczos" is reported as Lanczos (not None) for the hires fix and extras', async () => {
    const { resolveUpscaler } = await import('../../src/request/upscalers.ts');
    expect(resolveUpscaler('Lanczos', 'hr_upscaler', {}, { latent: true, dflt: 'Latent' }).label).toBe('Lanczos');
    expect(resolveUpscaler('lanczos', 'upscaler_1', {}, { latent: false, dflt: 'None' }).label).toBe('Lanczos');
    expect(resolveUpscaler('None', 'upscaler_1', {}, { latent: false, dflt: 'None' }).label).toBe('None');
    const r = normalizeRequest('txt2img', { ...base, enable_hr: true, hr_upscaler: 'Lanczos', hr_scale: 1.5 }, ctx());
    expect(r.request.hires?.upscalerName).toBe('Lanczos');
  });
});
