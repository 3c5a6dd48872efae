/**
 * zod schemas of the A1111 `/sdapi/v1/txt2img` and `/img2img` bodies (docs/a1111-contract.md) plus
 * the extensions clients send (`model`, `extra_images`, sd.cpp `sample_method` / `batch_count`, Forge
 * `distilled_cfg_scale`).
 *
 * Leniency, modelled on A1111's pydantic v1 lax mode because clients rely on it:
 * - Unknown keys are dropped (pydantic `Extra.ignore`; SillyTavern sends `url`, `auth`, `clip_skip`).
 * - Explicit `null` = absent, for every field (A1111 would pass some nulls on and crash with a 500 later).
 * - Integers: JSON integers, floats truncated toward zero (`7.9` → 7), integer strings (`"7"`).
 *   Booleans only for the flag-like `inpainting_mask_invert` (`true` → 1), as A1111 documents.
 * - Floats: numbers and numeric strings (`"7.5"`).
 * - Booleans: `true/false`, `0/1`, and the strings pydantic v1 accepts (`"true"`, `"1"`, `"yes"`, `"on"`, ...).
 * - Strings: strings, and numbers turned into strings (pydantic v1 does the same).
 * - Image lists: a list of strings, or a single string taken as a one-element list.
 * Anything else is a type error (422) naming the field.
 */
import { z } from 'zod';
import { parseNumericString } from '../../request/lax-number.ts';
import { MAX_PROMPT_CHARS } from '../../request/limits.ts';

const absent = (v: unknown): unknown => (v === null ? undefined : v);

export const INT_ERROR = 'expected an integer';
export const NUMBER_ERROR = 'expected a number';
export const BOOL_ERROR = 'expected a boolean';
export const STRING_ERROR = 'expected a string';
export const LIST_ERROR = 'expected a list of strings';
export const OBJECT_ERROR = 'expected an object';

export function laxInt(opts: { bools?: boolean } = {}) {
  return z.preprocess(
    (v) => {
      if (v === null) return undefined;
      if (typeof v === 'number' && Number.isFinite(v)) return Math.trunc(v);
      if (typeof v === 'string') return parseNumericString(v, 'int') ?? v;
      if (opts.bools && typeof v === 'boolean') return v ? 1 : 0;
      return v;
    },
    // Not `.int()`: zod 4 also rejects unsafe integers there, and a too-large seed deserves the 400 that
    // names the allowed range rather than a type error.
    z.number({ error: INT_ERROR }).refine(Number.isInteger, { error: INT_ERROR }).optional(),
  );
}

export function laxFloat() {
  return z.preprocess(
    (v) => {
      if (v === null) return undefined;
      if (typeof v === 'string') return parseNumericString(v, 'float') ?? v;
      return v;
    },
    z.number({ error: NUMBER_ERROR }).optional(),
  );
}

const TRUE_STRINGS = new Set(['true', '1', 'yes', 'on', 't', 'y']);
const FALSE_STRINGS = new Set(['false', '0', 'no', 'off', 'f', 'n']);

export function laxBool() {
  return z.preprocess(
    (v) => {
      if (v === null) return undefined;
      if (v === 0 || v === 1) return v === 1;
      if (typeof v === 'string') {
        const s = v.trim().toLowerCase();
        if (TRUE_STRINGS.has(s)) return true;
        if (FALSE_STRINGS.has(s)) return false;
      }
      return v;
    },
    z.boolean({ error: BOOL_ERROR }).optional(),
  );
}

export function laxStr() {
  return z.preprocess(
    (v) => (v === null ? undefined : typeof v === 'number' && Number.isFinite(v) ? String(v) : v),
    z.string({ error: STRING_ERROR }).optional(),
  );
}

function promptStr() {
  return z.preprocess(
    (v) => (v === null ? undefined : typeof v === 'number' && Number.isFinite(v) ? String(v) : v),
    z
      .string({ error: STRING_ERROR })
      .max(MAX_PROMPT_CHARS, { error: `must be at most ${MAX_PROMPT_CHARS} characters` })
      .optional(),
  );
}

function strList() {
  return z.preprocess(
    (v) => (v === null ? undefined : typeof v === 'string' ? [v] : v),
    z.array(z.string({ error: STRING_ERROR }), { error: LIST_ERROR }).optional(),
  );
}

function record() {
  return z.preprocess(absent, z.record(z.string(), z.unknown(), { error: OBJECT_ERROR }).optional());
}

function list() {
  return z.preprocess(absent, z.array(z.unknown(), { error: 'expected a list' }).optional());
}

/** Fields shared by txt2img and img2img (A1111 `StableDiffusionProcessing`, plus extensions). */
const commonShape = {
  prompt: promptStr(),
  negative_prompt: promptStr(),
  styles: strList(),
  seed: laxInt(),
  subseed: laxInt(),
  subseed_strength: laxFloat(),
  seed_resize_from_h: laxInt(),
  seed_resize_from_w: laxInt(),
  sampler_name: laxStr(),
  // SD.Next sends an integer index here; it is ignored (with a warning) rather than looked up as a name.
  sampler_index: z.preprocess(absent, z.union([z.string(), z.number()], { error: STRING_ERROR }).optional()),
  /** stable-diffusion.cpp's native sampler field. */
  sample_method: laxStr(),
  scheduler: laxStr(),
  batch_size: laxInt(),
  n_iter: laxInt(),
  /** sd-server's name for n_iter. */
  batch_count: laxInt(),
  steps: laxInt(),
  cfg_scale: laxFloat(),
  /** Forge's Flux guidance. */
  distilled_cfg_scale: laxFloat(),
  width: laxInt(),
  height: laxInt(),
  restore_faces: laxBool(),
  tiling: laxBool(),
  do_not_save_samples: laxBool(),
  do_not_save_grid: laxBool(),
  eta: laxFloat(),
  denoising_strength: laxFloat(),
  s_min_uncond: laxFloat(),
  s_churn: laxFloat(),
  s_tmax: laxFloat(),
  s_tmin: laxFloat(),
  s_noise: laxFloat(),
  override_settings: record(),
  override_settings_restore_afterwards: laxBool(),
  refiner_checkpoint: laxStr(),
  refiner_switch_at: laxFloat(),
  disable_extra_networks: laxBool(),
  firstpass_image: laxStr(),
  comments: record(),
  force_task_id: laxStr(),
  script_name: laxStr(),
  script_args: list(),
  send_images: laxBool(),
  save_images: laxBool(),
  alwayson_scripts: record(),
  infotext: laxStr(),
  /** The profile to render with (the existing client sends it; A1111 would ignore it). */
  model: laxStr(),
  /** Reference images for instruction-edit models (sd-server / KoboldCpp convention). */
  extra_images: strList(),
  clip_skip: laxInt(),
};

export const txt2imgSchema = z.object({
  ...commonShape,
  enable_hr: laxBool(),
  firstphase_width: laxInt(),
  firstphase_height: laxInt(),
  hr_scale: laxFloat(),
  hr_upscaler: laxStr(),
  hr_second_pass_steps: laxInt(),
  hr_resize_x: laxInt(),
  hr_resize_y: laxInt(),
  hr_checkpoint_name: laxStr(),
  hr_sampler_name: laxStr(),
  hr_scheduler: laxStr(),
  hr_prompt: laxStr(),
  hr_negative_prompt: laxStr(),
});

export const img2imgSchema = z.object({
  ...commonShape,
  init_images: strList(),
  resize_mode: laxInt(),
  image_cfg_scale: laxFloat(),
  mask: laxStr(),
  mask_blur_x: laxInt(),
  mask_blur_y: laxInt(),
  mask_blur: laxInt(),
  mask_round: laxBool(),
  inpainting_fill: laxInt(),
  inpaint_full_res: laxBool(),
  inpaint_full_res_padding: laxInt(),
  inpainting_mask_invert: laxInt({ bools: true }),
  initial_noise_multiplier: laxFloat(),
  latent_mask: laxStr(),
  include_init_images: laxBool(),
});

export type Txt2ImgBody = z.output<typeof txt2imgSchema>;
export type Img2ImgBody = z.output<typeof img2imgSchema>;
/** Either body, seen through one type: route-specific fields are simply absent on the other route. */
export type A1111Body = Txt2ImgBody & Partial<Img2ImgBody>;
export type A1111Route = 'txt2img' | 'img2img';

export function schemaFor(route: A1111Route) {
  return route === 'txt2img' ? txt2imgSchema : img2imgSchema;
}
