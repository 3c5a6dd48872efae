/**
 * The A1111 vocabulary for what users tweak, resolved into RenderRequest fields the graph builders apply:
 * `<lora:name:weight>` prompt tags, the hires fix, upscaler names, `samples_format` and its quality options,
 * and `override_settings`. Pure (the ComfyUI file lists come in through the context); bad input throws a
 * RequestError naming the field.
 */
import type { HiresFix, LoraUse, OutputFormat, Upscaler } from '../../render/types.ts';
import type { ModelProfile } from '../../models/profile.ts';
import { fileStem, matchFile } from '../comfy-catalog.ts';
import { RequestError, describeValue } from './errors.ts';
import { chooseHiresSampler } from './sampling.ts';
import type { A1111Body } from './schema.ts';
import { tidyPromptCommas } from '../../text/trim.ts';

/** ComfyUI file lists the front fetched before normalising (undefined: ComfyUI did not answer). */
export interface CatalogLists {
  loras?: string[];
  upscaleModels?: string[];
}

export interface LoraTag {
  name: string;
  te: number;
  unet: number;
}

const LORA_TAG = /<lora:([^>]*)>/gi;
/** Other extra-network tags A1111 knows; they have no ComfyUI meaning here and are stripped with a warning. */
const OTHER_TAG = /<(hypernet|lyco):([^>]*)>/gi;

/**
 * `<lora:name>`, `<lora:name:w>` (both weights), `<lora:name:te:unet>` and named `te=`/`unet=` arguments, as
 * A1111's extra networks parse them. The tags are removed from the prompt (the text encoder never sees them).
 */
export function parseLoraTags(prompt: string, warnings: string[]): { prompt: string; tags: LoraTag[] } {
  const tags: LoraTag[] = [];
  let text = prompt.replace(LORA_TAG, (_m, body: string) => {
    const parts = body.split(':').map((p) => p.trim());
    const name = parts.shift() ?? '';
    const positional: number[] = [];
    const named: Record<string, number> = {};
    for (const p of parts) {
      const eq = p.indexOf('=');
      const v = Number(eq >= 0 ? p.slice(eq + 1) : p);
      if (p === '' || !Number.isFinite(v)) {
        throw new RequestError(400, 'prompt', `prompt: LoRA tag <lora:${body}> has a weight that is not a number (${describeValue(p)})`);
      }
      if (eq >= 0) named[p.slice(0, eq).trim().toLowerCase()] = v;
      else positional.push(v);
    }
    const te = named.te ?? positional[0] ?? 1;
    const unet = named.unet ?? positional[1] ?? te;
    if (name !== '') tags.push({ name, te, unet });
    return '';
  });
  text = text.replace(OTHER_TAG, (m) => {
    warnings.push(`prompt: ${m} removed; only LoRA extra networks are supported`);
    return '';
  });
  return { prompt: tags.length > 0 || text !== prompt ? tidyPromptCommas(text.replace(/[ \t]{2,}/g, ' ')) : prompt, tags };
}

export function resolveLoras(tags: LoraTag[], lists: CatalogLists): LoraUse[] {
  if (tags.length === 0) return [];
  const files = lists.loras;
  if (!files) throw new RequestError(503, 'prompt', 'prompt: LoRA tags need the LoRA list from ComfyUI, which did not answer; try again');
  return tags.map((t) => {
    const file = matchFile(files, t.name);
    if (!file) {
      const known = files.map(fileStem);
      throw new RequestError(400, 'prompt', `prompt: unknown LoRA "${t.name}"; ComfyUI has: ${known.length > 0 ? known.join(', ') : '(no LoRA files)'}`, {
        known,
      });
    }
    return { file, name: t.name, model: t.unet, clip: t.te };
  });
}

/** A1111's latent upscale modes (`/sdapi/v1/latent-upscale-modes`) → ComfyUI LatentUpscale methods. */
export const LATENT_MODES: Record<string, string> = {
  Latent: 'bilinear',
  'Latent (antialiased)': 'bilinear',
  'Latent (bicubic)': 'bicubic',
  'Latent (bicubic antialiased)': 'bicubic',
  'Latent (nearest)': 'nearest-exact',
  'Latent (nearest-exact)': 'nearest-exact',
  'Latent (area)': 'area',
  'Latent (bislerp)': 'bislerp',
};

/** A1111's built-in pixel upscalers → ComfyUI ImageScale / ImageScaleBy methods (also accepted by their own names). */
export const PIXEL_UPSCALERS: Record<string, string> = {
  // A1111's "None" upscaler still resizes to the target, with Lanczos.
  None: 'lanczos',
  Lanczos: 'lanczos',
  Nearest: 'nearest-exact',
  Bilinear: 'bilinear',
  Bicubic: 'bicubic',
  Area: 'area',
};

export function resolveUpscaler(
  name: string | undefined,
  field: string,
  lists: CatalogLists,
  opts: { latent: boolean; dflt: string },
): { upscaler: Upscaler; label: string } {
  const wanted = name === undefined || name.trim() === '' ? opts.dflt : name.trim();
  const lower = wanted.toLowerCase();
  if (opts.latent) {
    const latent = Object.entries(LATENT_MODES).find(([k]) => k.toLowerCase() === lower);
    if (latent) return { upscaler: { kind: 'latent', method: latent[1] }, label: latent[0] };
  }
  // By A1111 name first: "Lanczos" is Lanczos, not "None" (which also resizes with lanczos).
  const pixel =
    Object.entries(PIXEL_UPSCALERS).find(([k]) => k.toLowerCase() === lower) ?? Object.entries(PIXEL_UPSCALERS).find(([k, v]) => k !== 'None' && v === lower);
  if (pixel) return { upscaler: { kind: 'pixel', method: pixel[1] }, label: pixel[0] };
  const model = lists.upscaleModels ? matchFile(lists.upscaleModels, wanted) : undefined;
  if (model) return { upscaler: { kind: 'model', model }, label: fileStem(model) };
  const valid = [...(opts.latent ? Object.keys(LATENT_MODES) : []), ...Object.keys(PIXEL_UPSCALERS), ...(lists.upscaleModels ?? []).map(fileStem)];
  throw new RequestError(400, field, `${field}: unknown upscaler "${wanted}"; valid upscalers: ${valid.join(', ')}`, { valid });
}

const present = (s: string | undefined): s is string => s !== undefined && s.trim() !== '';

/**
 * txt2img hires fix: target from `hr_resize_x/y` (one of them 0 keeps the aspect) or `hr_scale` × size,
 * snapped to the model grid; second pass steps `hr_second_pass_steps` (0 = the first pass's steps) at
 * `denoising_strength` (A1111's hires default 0.7).
 */
export function chooseHires(
  b: A1111Body,
  ctx: {
    profile: ModelProfile;
    size: { width: number; height: number };
    steps: number;
    /** The first pass's sampler and scheduler (ComfyUI names): the second pass's unless hr_* name others. */
    sampling: { sampler: string; scheduler: string };
    lists: CatalogLists;
    /** The target size as rendered: snapped to the grid, scaled down into the budget (size.ts fitSize). */
    fit: (field: string, w: number, h: number) => { width: number; height: number };
  },
  warnings: string[],
): HiresFix | undefined {
  if (b.enable_hr !== true) return undefined;
  const { width, height } = ctx.size;
  const rx = b.hr_resize_x ?? 0;
  const ry = b.hr_resize_y ?? 0;
  let tw: number;
  let th: number;
  let field: string;
  if (rx > 0 || ry > 0) {
    field = rx > 0 ? 'hr_resize_x' : 'hr_resize_y';
    tw = rx > 0 ? rx : Math.round((width * ry) / height);
    th = ry > 0 ? ry : Math.round((height * rx) / width);
  } else {
    field = 'hr_scale';
    const scale = b.hr_scale ?? 2;
    if (!(scale >= 1 && scale <= 8)) throw new RequestError(400, 'hr_scale', `hr_scale: ${scale} is out of range 1..8`, { min: 1, max: 8 });
    tw = Math.round(width * scale);
    th = Math.round(height * scale);
  }
  // A target over the budget (SillyTavern's default ×2 of 1024²) is scaled down to fit, said in warnings.
  const { width: hw, height: hh } = ctx.fit(field, tw, th);
  const second = b.hr_second_pass_steps ?? 0;
  if (second < 0 || second > 150) throw new RequestError(400, 'hr_second_pass_steps', `hr_second_pass_steps: ${second} is out of range 0..150`);
  const denoise = b.denoising_strength ?? 0.7;
  if (!(denoise >= 0 && denoise <= 1)) throw new RequestError(400, 'denoising_strength', `denoising_strength: ${denoise} is out of range 0..1`);
  const { upscaler, label } = resolveUpscaler(b.hr_upscaler, 'hr_upscaler', ctx.lists, { latent: true, dflt: 'Latent' });
  const own = chooseHiresSampler(b, ctx.sampling, warnings);
  for (const f of ['hr_checkpoint_name', 'hr_prompt', 'hr_negative_prompt'] as const) {
    const v = b[f];
    if (present(v) && v !== 'Use same checkpoint') {
      warnings.push(`${f}: not applied; the second pass uses the first pass's ${f.replace('hr_', '').replace('_name', '')}`);
    }
  }
  return { width: hw, height: hh, upscaler, upscalerName: label, steps: second > 0 ? second : ctx.steps, denoise, ...own };
}

/** A1111 option names the front applies from `override_settings` (and from `/sdapi/v1/options`). */
export const APPLIED_OVERRIDES = new Set(['sd_model_checkpoint', 'samples_format', 'jpeg_quality', 'webp_lossless']);
/** Overrides that change nothing for these models at their usual values, so they need no warning. */
const HARMLESS: Record<string, readonly unknown[]> = {
  CLIP_stop_at_last_layers: [1, '1'],
  sd_vae: ['Automatic', 'None', ''],
};

/** `samples_format` (png, jpg/jpeg, webp) with `jpeg_quality` and `webp_lossless`: override_settings win over options. */
export function chooseOutputFormat(b: A1111Body, options: Record<string, unknown>, warnings: string[]): OutputFormat | undefined {
  const o = b.override_settings ?? {};
  // Own keys only, and only primitives are read: an object value (`{"toString": 1}`) would throw on conversion.
  const pick = (k: string): string | number | boolean | undefined => {
    const v = Object.hasOwn(o, k) && o[k] !== undefined && o[k] !== null ? o[k] : Object.hasOwn(options, k) ? options[k] : undefined;
    return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : undefined;
  };
  const raw = String(pick('samples_format') ?? 'png')
    .trim()
    .toLowerCase();
  const format = raw === 'jpg' || raw === 'jpeg' ? 'jpeg' : raw === 'webp' ? 'webp' : raw === 'png' ? 'png' : undefined;
  if (!format) {
    warnings.push(`samples_format: "${raw}" not supported (png, jpg, webp); answering PNG`);
    return undefined;
  }
  if (format === 'png') return undefined;
  const q = Number(pick('jpeg_quality') ?? 80);
  const quality = Number.isFinite(q) ? Math.min(100, Math.max(1, Math.round(q))) : 80;
  const lossless = pick('webp_lossless') === true || pick('webp_lossless') === 'true';
  return { format, quality, lossless };
}

export function overrideWarnings(b: A1111Body, options: Record<string, unknown>, warnings: string[]): void {
  for (const [k, v] of Object.entries(b.override_settings ?? {})) {
    if (APPLIED_OVERRIDES.has(k) || v === null || v === undefined) continue;
    if ((Object.hasOwn(HARMLESS, k) && HARMLESS[k]!.includes(v)) || (Object.hasOwn(options, k) && options[k] === v)) continue;
    warnings.push(`override_settings.${k}: not applied by this service`);
  }
}
