/**
 * Upscalers by name (A1111's names, which its clients list from `/sdapi/v1/upscalers` and send back): latent
 * resize modes, pixel resize methods and ComfyUI's upscale-model files, and the matching of a client's file
 * name to ComfyUI's list.
 */
import type { PreprocessorNode } from '../models/preprocessors.ts';
import type { Upscaler } from '../contracts/render.ts';
import { RequestError } from '../errors/request-error.ts';

/** ComfyUI file lists the front fetched before resolving (undefined: ComfyUI did not answer). */
export interface CatalogLists {
  loras?: string[];
  upscaleModels?: string[];
  /** The late-bound ControlNet preprocessor nodes the live ComfyUI has (asked only for a unit with such a module). */
  preprocessors?: readonly PreprocessorNode[];
}

/** A1111 shows files by stem: `style/detail.safetensors` → `detail`. */
export function fileStem(file: string): string {
  const base = file.split(/[\\/]/).pop() ?? file;
  return base.replace(/\.[^.]+$/, '');
}

/** The listed file a client's name means: the file itself, its path without extension, or its stem. */
export function matchFile(files: readonly string[], name: string): string | undefined {
  const n = name.trim().toLowerCase();
  return (
    files.find((f) => f.toLowerCase() === n) ??
    files.find((f) => f.toLowerCase().replace(/\.[^./\\]+$/, '') === n) ??
    files.find((f) => fileStem(f).toLowerCase() === n)
  );
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
