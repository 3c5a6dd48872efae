/**
 * A1111 response pieces: `parameters` (the request echoed with defaults filled), `info` (a JSON *string*,
 * as A1111 returns it) and per-image infotexts (also embedded as the PNG `parameters` text chunk).
 */
import { alwaysOnScriptsEcho } from './controlnet.ts';
import { infotextFor } from '../../infotext/format.ts';
import { outcomeWarnings } from '../../contracts/outcome.ts';
import type { ImageRender, RenderRequest, RenderResult } from '../../contracts/render.ts';
import { schemaFor, type A1111Route } from './schema.ts';

/** Reported as `info.version`. */
export const INFO_VERSION = 'comfy-durable';

// The infotext is its own module (src/infotext): activities write it into PNGs, the front reports it.
export { infotextFor };

export function itemCount(request: RenderRequest): number {
  return request.batchSize * request.nIter;
}

/** A1111 `job_timestamp`: `YYYYmmddHHMMSS` (UTC here; A1111 uses the server's local time). */
export function jobTimestamp(date: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return (
    p(date.getUTCFullYear(), 4) + p(date.getUTCMonth() + 1) + p(date.getUTCDate()) + p(date.getUTCHours()) + p(date.getUTCMinutes()) + p(date.getUTCSeconds())
  );
}

export interface InfoOptions {
  renderId: string;
  /** When the job started (defaults to now). */
  startedAt?: Date;
  /** Non-fatal notes from normalisation (ignored fields, snapped sizes), reported as `warnings`. */
  warnings?: string[];
}

/**
 * The `info` field: a JSON-encoded string with A1111's `Processed.js()` keys plus `render_id`.
 * `result.seeds` (the seeds actually rendered) wins over `request.seed + i` when given.
 */
export function buildInfo(
  request: ImageRender,
  result: Partial<Pick<RenderResult, 'seeds' | 'interrupted' | 'skipped' | 'partial' | 'outputs'>> | undefined,
  opts: InfoOptions,
): string {
  // After an interrupt or a skip, only the rendered items are reported (one entry per returned image).
  const seeds = result?.seeds ?? Array.from({ length: itemCount(request) }, (_, i) => request.seed + i);
  const n = seeds.length;
  const extra: Record<string, string | number> = { 'Schedule type': request.report.scheduler };
  if (request.guidance !== undefined) extra['Distilled CFG Scale'] = request.guidance;
  const info: Record<string, unknown> = {
    prompt: request.prompt,
    all_prompts: Array.from({ length: n }, () => request.prompt),
    negative_prompt: request.negativePrompt,
    all_negative_prompts: Array.from({ length: n }, () => request.negativePrompt),
    seed: seeds[0] ?? request.seed,
    all_seeds: seeds,
    // Variation seeds are not supported: reported as A1111 reports "none".
    subseed: -1,
    all_subseeds: Array.from({ length: n }, () => -1),
    subseed_strength: 0,
    width: request.width,
    height: request.height,
    sampler_name: request.report.samplerName,
    cfg_scale: request.cfg,
    steps: request.steps,
    batch_size: request.batchSize,
    restore_faces: false,
    face_restoration_model: null,
    sd_model_name: request.model,
    sd_model_hash: null,
    sd_vae_name: null,
    sd_vae_hash: null,
    seed_resize_from_w: -1,
    seed_resize_from_h: -1,
    denoising_strength: request.kind === 'img2img' ? request.denoise : null,
    extra_generation_params: extra,
    index_of_first_image: 0,
    infotexts: seeds.map((seed) => infotextFor(request, seed - request.seed)),
    styles: [],
    job_timestamp: jobTimestamp(opts.startedAt ?? new Date()),
    clip_skip: 1,
    is_using_inpainting_conditioning: false,
    version: INFO_VERSION,
    render_id: opts.renderId,
  };
  if (result?.interrupted) info.interrupted = true;
  if (result?.skipped && result.skipped.length > 0) info.skipped = result.skipped;
  const warnings = [...(opts.warnings ?? []), ...outcomeWarnings(request, result)];
  if (result?.partial && result.partial.length > 0) info.partial = result.partial.map((p) => p.item);
  if (warnings.length > 0) info.warnings = warnings;
  return JSON.stringify(info);
}

/** A1111 API defaults of the fields every route shares (docs/a1111-contract.md). */
const COMMON_DEFAULTS: Record<string, unknown> = {
  prompt: '',
  negative_prompt: '',
  styles: null,
  seed: -1,
  subseed: -1,
  subseed_strength: 0,
  seed_resize_from_h: -1,
  seed_resize_from_w: -1,
  sampler_name: null,
  scheduler: null,
  batch_size: 1,
  n_iter: 1,
  steps: null,
  cfg_scale: null,
  width: 512,
  height: 512,
  restore_faces: null,
  tiling: null,
  do_not_save_samples: false,
  do_not_save_grid: false,
  eta: null,
  denoising_strength: null,
  s_min_uncond: null,
  s_churn: null,
  s_tmax: null,
  s_tmin: null,
  s_noise: null,
  override_settings: null,
  override_settings_restore_afterwards: true,
  refiner_checkpoint: null,
  refiner_switch_at: null,
  disable_extra_networks: false,
  firstpass_image: null,
  comments: null,
  force_task_id: null,
  sampler_index: 'Euler',
  script_name: null,
  script_args: [],
  send_images: true,
  save_images: false,
  alwayson_scripts: {},
  infotext: null,
  model: null,
  sample_method: null,
  batch_count: null,
  distilled_cfg_scale: null,
  extra_images: null,
  clip_skip: null,
};

const TXT2IMG_DEFAULTS: Record<string, unknown> = {
  ...COMMON_DEFAULTS,
  enable_hr: false,
  firstphase_width: 0,
  firstphase_height: 0,
  hr_scale: 2,
  hr_upscaler: null,
  hr_second_pass_steps: 0,
  hr_resize_x: 0,
  hr_resize_y: 0,
  hr_checkpoint_name: null,
  hr_sampler_name: null,
  hr_scheduler: null,
  hr_prompt: '',
  hr_negative_prompt: '',
};

const IMG2IMG_DEFAULTS: Record<string, unknown> = {
  ...COMMON_DEFAULTS,
  init_images: null,
  resize_mode: 0,
  denoising_strength: 0.75,
  image_cfg_scale: null,
  mask: null,
  mask_blur_x: 4,
  mask_blur_y: 4,
  mask_blur: null,
  mask_round: true,
  inpainting_fill: 0,
  inpaint_full_res: true,
  inpaint_full_res_padding: 0,
  inpainting_mask_invert: 0,
  initial_noise_multiplier: null,
  latent_mask: null,
  include_init_images: false,
};

/**
 * `parameters`: every request field, values as sent (so `seed` stays -1, as in A1111), defaults filled in.
 * With `request`, absent fields whose A1111 API default would misreport this render (steps 50, cfg 7,
 * sampler "Euler", no model) show the values actually used instead. Images are echoed only with `include_init_images` (A1111
 * behaviour, and it keeps responses and memory small).
 */
export function buildParameters(route: A1111Route, body: unknown, request?: ImageRender): Record<string, unknown> {
  const defaults = route === 'txt2img' ? TXT2IMG_DEFAULTS : IMG2IMG_DEFAULTS;
  // Accepts the raw body as well as a parsed one: coercion makes the echo show what was understood.
  const parsed = schemaFor(route).safeParse(body);
  const sent: Record<string, unknown> = parsed.success ? parsed.data : body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [k, d] of Object.entries(defaults)) out[k] = sent[k] === undefined ? d : sent[k];
  if (!sent.include_init_images) {
    if (route === 'img2img') {
      out.init_images = null;
      out.mask = null;
    }
    out.extra_images = null;
    out.alwayson_scripts = alwaysOnScriptsEcho(out.alwayson_scripts);
  }
  if (!request) return out;
  const fill = (k: string, v: unknown) => {
    if (sent[k] === undefined) out[k] = v;
  };
  fill('steps', request.steps);
  fill('cfg_scale', request.cfg);
  fill('width', request.report.requestedWidth);
  fill('height', request.report.requestedHeight);
  fill('sampler_name', request.report.samplerName);
  fill('sampler_index', request.report.samplerName);
  fill('scheduler', request.report.scheduler);
  fill('model', request.model);
  if (request.guidance !== undefined) fill('distilled_cfg_scale', request.guidance);
  return out;
}
