import { describe, expect, it } from 'vitest';
import { img2imgSchema, txt2imgSchema } from '../../src/api/a1111/schema.ts';

describe('A1111 body schemas: lax coercion like pydantic v1', () => {
  it('drops unknown keys (SillyTavern sends url, auth)', () => {
    const r = txt2imgSchema.parse({ prompt: 'x', url: 'http://a', auth: 'u:p', whatever: { a: 1 } });
    expect(r).toEqual({ prompt: 'x' });
  });

  it('explicit null = absent', () => {
    expect(txt2imgSchema.parse({ seed: null, prompt: null, styles: null, override_settings: null, send_images: null })).toEqual({});
  });

  it('integers: numbers truncated, integer strings parsed', () => {
    expect(txt2imgSchema.parse({ steps: '7', width: 512.9, seed: -1.5, batch_size: ' 2 ' })).toEqual({ steps: 7, width: 512, seed: -1, batch_size: 2 });
  });

  it('floats: numeric strings parsed', () => {
    expect(txt2imgSchema.parse({ cfg_scale: '7.5', distilled_cfg_scale: 3, denoising_strength: '.4' })).toEqual({
      cfg_scale: 7.5,
      distilled_cfg_scale: 3,
      denoising_strength: 0.4,
    });
  });

  it('booleans: true/false, 0/1, pydantic strings', () => {
    expect(txt2imgSchema.parse({ send_images: 0, save_images: 'true', restore_faces: 'off', tiling: 'Yes' })).toEqual({
      send_images: false,
      save_images: true,
      restore_faces: false,
      tiling: true,
    });
  });

  it('strings: numbers stringified', () => {
    expect(txt2imgSchema.parse({ prompt: 42 })).toEqual({ prompt: '42' });
  });

  it('image lists: a single string is a one-element list', () => {
    expect(img2imgSchema.parse({ init_images: 'abc', extra_images: ['a', 'b'] })).toEqual({ init_images: ['abc'], extra_images: ['a', 'b'] });
  });

  it('inpainting_mask_invert accepts booleans', () => {
    expect(img2imgSchema.parse({ inpainting_mask_invert: true }).inpainting_mask_invert).toBe(1);
    expect(img2imgSchema.parse({ inpainting_mask_invert: false }).inpainting_mask_invert).toBe(0);
  });

  it.each([
    [{ steps: 'abc' }, ['steps']],
    [{ steps: '7.5' }, ['steps']],
    [{ steps: true }, ['steps']],
    [{ cfg_scale: 'lots' }, ['cfg_scale']],
    [{ send_images: 'maybe' }, ['send_images']],
    [{ prompt: { a: 1 } }, ['prompt']],
    [{ prompt: true }, ['prompt']],
    [{ extra_images: ['ok', 3] }, ['extra_images', 1]],
    [{ override_settings: 'x' }, ['override_settings']],
  ])('type errors name the field %#', (body, path) => {
    const r = txt2imgSchema.safeParse(body);
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(path);
  });

  it('txt2img ignores img2img-only fields; img2img keeps them', () => {
    expect(txt2imgSchema.parse({ init_images: ['a'], mask: 'm' })).toEqual({});
    expect(img2imgSchema.parse({ init_images: ['a'], mask: 'm' })).toEqual({ init_images: ['a'], mask: 'm' });
  });
});
