/**
 * Every A1111 body field, classified: applied in the graph or the answer, without effect by design here, or
 * accepted but not applied — and then, when its value would change what A1111 renders, named in
 * `info.warnings`. The classification covers the whole request schema (a test walks it), so a field added
 * to the schema without a decision fails that test.
 */
import { present } from '../../request/fields.ts';
import type { A1111Body, A1111Route } from './schema.ts';
import { controlNetScriptKey } from './controlnet.ts';

/** Fields the service applies (graph, sizes, answer shape) — some with warnings of their own elsewhere. */
export const APPLIED_FIELDS: Record<A1111Route | 'common', readonly string[]> = {
  common: [
    'prompt',
    'negative_prompt',
    'seed',
    'sampler_name',
    'sampler_index',
    'sample_method',
    'scheduler',
    'batch_size',
    'n_iter',
    'batch_count',
    'steps',
    'cfg_scale',
    'distilled_cfg_scale',
    'width',
    'height',
    'denoising_strength',
    'override_settings',
    'override_settings_restore_afterwards',
    'disable_extra_networks',
    'script_name',
    'script_args',
    'send_images',
    'model',
    'extra_images',
  ],
  txt2img: [
    'enable_hr',
    'hr_scale',
    'hr_upscaler',
    'hr_second_pass_steps',
    'hr_resize_x',
    'hr_resize_y',
    'hr_sampler_name',
    'hr_scheduler',
    // Named in warnings by the hires fix itself (tweaks.ts) when set.
    'hr_checkpoint_name',
    'hr_prompt',
    'hr_negative_prompt',
  ],
  img2img: [
    'init_images',
    'resize_mode',
    'mask',
    'mask_round',
    'inpainting_mask_invert',
    // The inpaint fields (inpaint.ts): applied, or named in warnings.
    'mask_blur',
    'mask_blur_x',
    'mask_blur_y',
    'inpainting_fill',
    'inpaint_full_res',
    'inpaint_full_res_padding',
  ],
};

/**
 * Fields with nothing to apply: renders are always kept (gallery, /renders), progress is per render, and a
 * subseed does nothing without a subseed_strength (warned when set).
 */
export const NO_EFFECT_FIELDS: readonly string[] = ['do_not_save_samples', 'do_not_save_grid', 'save_images', 'comments', 'subseed'];

interface Unapplied {
  /** Whether this value changes what A1111 would render (then it is named in warnings). */
  matters: (b: A1111Body, ctx: { sampler: string }) => boolean;
  text: string;
}

const STOCHASTIC = /ancestral|_sde|ddpm|lcm/;

/** Accepted but not applied; `matters` leaves out the values that render the same here as in A1111. */
export const UNAPPLIED_FIELDS: Record<string, Unapplied> = {
  styles: { matters: (b) => (b.styles?.length ?? 0) > 0, text: 'prompt styles are not supported; ignored' },
  subseed_strength: { matters: (b) => (b.subseed_strength ?? 0) !== 0, text: 'variation seeds are not supported; ignored' },
  seed_resize_from_h: { matters: (b) => (b.seed_resize_from_h ?? -1) > 0, text: 'seed resize is not supported; ignored' },
  seed_resize_from_w: { matters: (b) => (b.seed_resize_from_w ?? -1) > 0, text: 'seed resize is not supported; ignored' },
  restore_faces: { matters: (b) => b.restore_faces === true, text: 'face restoration is not supported; ignored' },
  tiling: { matters: (b) => b.tiling === true, text: 'not supported; ignored' },
  // ComfyUI's stochastic samplers run at eta 1; deterministic ones ignore eta, in A1111 too.
  eta: {
    matters: (b, c) => b.eta !== undefined && b.eta !== null && b.eta !== 1 && STOCHASTIC.test(c.sampler),
    text: "not applied; ComfyUI's samplers run at eta 1",
  },
  s_churn: { matters: (b) => (b.s_churn ?? 0) > 0, text: 'sampler churn is not applied' },
  s_tmin: { matters: (b) => (b.s_churn ?? 0) > 0 && (b.s_tmin ?? 0) !== 0, text: 'not applied (no churn)' },
  s_tmax: { matters: (b) => (b.s_churn ?? 0) > 0 && (b.s_tmax ?? 0) !== 0, text: 'not applied (no churn)' },
  s_noise: { matters: (b) => b.s_noise !== undefined && b.s_noise !== null && b.s_noise !== 1, text: 'not applied; noise is unscaled (1)' },
  s_min_uncond: { matters: (b) => (b.s_min_uncond ?? 0) > 0, text: 'not applied' },
  refiner_checkpoint: { matters: (b) => present(b.refiner_checkpoint) && b.refiner_checkpoint !== 'None', text: 'refiners are not supported; ignored' },
  refiner_switch_at: {
    matters: (b) => present(b.refiner_checkpoint) && b.refiner_checkpoint !== 'None' && b.refiner_switch_at !== undefined && b.refiner_switch_at !== null,
    text: 'refiners are not supported; ignored',
  },
  firstpass_image: { matters: (b) => present(b.firstpass_image), text: 'not applied; the hires fix renders its own first pass' },
  force_task_id: { matters: (b) => present(b.force_task_id), text: 'not applied; progress and results are reported under the render id in info.render_id' },
  // ControlNet's units are applied (controlnet.ts); any other always-on script is not.
  alwayson_scripts: {
    matters: (b) => otherAlwaysOnScripts(b).length > 0,
    text: 'always-on scripts (extensions) other than ControlNet are not available; ignored',
  },
  infotext: { matters: (b) => present(b.infotext), text: 'parsing parameters from an infotext is not supported; ignored' },
  clip_skip: { matters: (b) => (b.clip_skip ?? 1) > 1, text: 'not supported by these models; ignored' },
  firstphase_width: { matters: (b) => (b.firstphase_width ?? 0) > 0, text: 'not applied; the first pass renders at width x height' },
  firstphase_height: { matters: (b) => (b.firstphase_height ?? 0) > 0, text: 'not applied; the first pass renders at width x height' },
  image_cfg_scale: { matters: (b) => b.image_cfg_scale !== undefined && b.image_cfg_scale !== null, text: 'not applied (an instruct-pix2pix setting)' },
  initial_noise_multiplier: {
    matters: (b) => b.initial_noise_multiplier !== undefined && b.initial_noise_multiplier !== null && b.initial_noise_multiplier !== 1,
    text: 'not applied; the initial noise is unscaled (1)',
  },
  latent_mask: { matters: (b) => present(b.latent_mask), text: 'not applied; the mask is used for the latent too' },
  include_init_images: { matters: (b) => b.include_init_images === true, text: 'not applied; the answer carries only the rendered images' },
};

function otherAlwaysOnScripts(b: A1111Body): string[] {
  const controlNet = controlNetScriptKey(b.alwayson_scripts);
  return Object.keys(b.alwayson_scripts ?? {}).filter((k) => k !== controlNet);
}

export function unappliedFieldWarnings(b: A1111Body, ctx: { sampler: string }, warnings: string[]): void {
  for (const [field, u] of Object.entries(UNAPPLIED_FIELDS)) {
    if ((b as Record<string, unknown>)[field] === undefined) continue;
    if (u.matters(b, ctx)) warnings.push(`${field}: ${u.text}`);
  }
}
