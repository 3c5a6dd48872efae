/**
 * The hires fix: a second sampling pass at a larger size, resolved against the first pass (its size, steps,
 * sampler and scheduler). Bad values throw a RequestError naming the client's field.
 */
import type { HiresFix } from '../contracts/render.ts';
import type { ModelProfile } from '../models/profile.ts';
import { RequestError } from '../errors/request-error.ts';
import type { HiresAsk } from './neutral.ts';
import { chooseHiresSampler } from './sampling.ts';
import { resolveUpscaler, type CatalogLists } from './upscalers.ts';

/**
 * Target from an exact side (the other 0 keeps the aspect) or scale × the first pass (default 2), fitted
 * like any size; second-pass steps (0 = the first pass's) at `denoise` (A1111's hires default 0.7).
 */
export function chooseHires(
  h: HiresAsk,
  ctx: {
    profile: ModelProfile;
    size: { width: number; height: number };
    steps: number;
    /** The first pass's sampler and scheduler (ComfyUI names): the second pass's unless the ask names others. */
    sampling: { sampler: string; scheduler: string };
    lists: CatalogLists;
    /** The target size as rendered: snapped to the grid, scaled down into the budget (size.ts fitSize). */
    fit: (field: string, w: number, h: number) => { width: number; height: number };
  },
  warnings: string[],
): HiresFix {
  const { names } = h;
  const { width, height } = ctx.size;
  const rx = h.resizeX ?? 0;
  const ry = h.resizeY ?? 0;
  let tw: number;
  let th: number;
  let field: string;
  if (rx > 0 || ry > 0) {
    field = rx > 0 ? names.resizeX : names.resizeY;
    tw = rx > 0 ? rx : Math.round((width * ry) / height);
    th = ry > 0 ? ry : Math.round((height * rx) / width);
  } else {
    field = names.scale;
    const scale = h.scale ?? 2;
    if (!(scale >= 1 && scale <= 8)) throw new RequestError(400, field, `${field}: ${scale} is out of range 1..8`, { min: 1, max: 8 });
    tw = Math.round(width * scale);
    th = Math.round(height * scale);
  }
  // A target over the budget (SillyTavern's default ×2 of 1024²) is scaled down to fit, said in warnings.
  const { width: hw, height: hh } = ctx.fit(field, tw, th);
  const second = h.steps ?? 0;
  if (second < 0 || second > 150) throw new RequestError(400, names.steps, `${names.steps}: ${second} is out of range 0..150`);
  const denoise = h.denoise ?? 0.7;
  if (!(denoise >= 0 && denoise <= 1)) throw new RequestError(400, names.denoise, `${names.denoise}: ${denoise} is out of range 0..1`);
  const { upscaler, label } = resolveUpscaler(h.upscaler, names.upscaler, ctx.lists, { latent: true, dflt: 'Latent' });
  const own = chooseHiresSampler(h, ctx.sampling, warnings);
  return { width: hw, height: hh, upscaler, upscalerName: label, steps: second > 0 ? second : ctx.steps, denoise, ...own };
}
