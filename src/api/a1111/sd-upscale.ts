/**
 * A1111's img2img "SD upscale" script: the init image enlarged by an upscaler to `scale` × its size, then
 * redrawn by img2img at `denoising_strength`. A1111 redraws it in tiles of width × height overlapping by
 * `overlap` pixels, so that an SD 1.5 model samples at its native size; the models here sample the whole
 * enlarged image in one pass (the output is fitted into the pixel budget like any size), so the tile size and
 * the overlap are not used, which the warnings say. `script_args` as A1111 takes them:
 * `[info (unused), overlap, upscaler (name, or index into GET /sdapi/v1/upscalers), scale factor]`.
 */
import type { SdUpscale, Upscaler } from '../../contracts/render.ts';
import { fileStem, PIXEL_UPSCALERS, resolveUpscaler, type CatalogLists } from '../../request/upscalers.ts';
import { RequestError, describeValue } from './errors.ts';
import { present } from '../../request/fields.ts';
import type { A1111Body, A1111Route } from './schema.ts';

/** A1111's script defaults (scripts/sd_upscale.py's UI): 64 px overlap, the first upscaler, ×2. */
const DEFAULT_OVERLAP = 64;
const DEFAULT_SCALE = 2;
/** Past this the fitted output could never hold it; A1111's slider stops at 4. */
const MAX_SCALE = 16;

/** The lower-case name A1111 lists the script under (`GET /sdapi/v1/scripts`) and matches `script_name` by. */
export const SD_UPSCALE_SCRIPT = 'sd upscale';

export function isSdUpscale(b: A1111Body): boolean {
  return present(b.script_name) && b.script_name.trim().toLowerCase() === SD_UPSCALE_SCRIPT;
}

/** Whether the body's upscaler might be an upscale model file, so the route fetches ComfyUI's list first. */
export function sdUpscaleNeedsModels(body: Record<string, unknown>): boolean {
  const name = body.script_name;
  const args = body.script_args;
  return typeof name === 'string' && name.trim().toLowerCase() === SD_UPSCALE_SCRIPT && Array.isArray(args) && args[2] !== undefined;
}

function numberArg(v: unknown, index: number, dflt: number): number {
  if (v === undefined || v === null || v === '') return dflt;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    throw new RequestError(422, `script_args.${index}`, `script_args.${index}: expected a number, got ${describeValue(v)}`);
  }
  return n;
}

/**
 * The upscaler argument: a name, or (A1111's UI radio posts one) an index into `GET /sdapi/v1/upscalers`.
 * An index past the pixel methods names one upscale model file itself: two files may share a stem, or a
 * stem may read like a pixel method, and the index is the client's only way to tell them apart.
 */
function chooseUpscaler(v: unknown, lists: CatalogLists): { upscaler: Upscaler; label: string } {
  const byName = (name: string | undefined) => resolveUpscaler(name, 'script_args.2', lists, { latent: false, dflt: 'None' });
  if (v === undefined || v === null || v === '') return byName(undefined);
  if (typeof v === 'string') return byName(v);
  if (typeof v === 'number' && Number.isInteger(v)) {
    const pixel = Object.keys(PIXEL_UPSCALERS);
    const models = lists.upscaleModels ?? [];
    if (v >= 0 && v < pixel.length) return byName(pixel[v]);
    const model = v >= pixel.length ? models[v - pixel.length] : undefined;
    if (model !== undefined) return { upscaler: { kind: 'model', model }, label: fileStem(model) };
    throw new RequestError(
      422,
      'script_args.2',
      `script_args.2: upscaler index ${v} is out of range 0..${pixel.length + models.length - 1} (GET /sdapi/v1/upscalers lists them)`,
    );
  }
  throw new RequestError(422, 'script_args.2', `script_args.2: expected an upscaler name or index, got ${describeValue(v)}`);
}

/**
 * The script's arguments, checked. Refused (422 naming the field) where A1111's script would not run as
 * asked: on txt2img (an img2img script there), with an inpaint mask (the script redraws the whole image).
 */
export function chooseSdUpscale(route: A1111Route, b: A1111Body, lists: CatalogLists, warnings: string[]): SdUpscale {
  if (route !== 'img2img') {
    throw new RequestError(422, 'script_name', `script_name: Script '${b.script_name}' not found (SD upscale is an img2img script)`);
  }
  if (present(b.mask)) {
    throw new RequestError(422, 'mask', 'mask: SD upscale redraws the whole image; send it without a mask');
  }
  const args = b.script_args ?? [];
  const overlap = numberArg(args[1], 1, DEFAULT_OVERLAP);
  const scale = numberArg(args[3], 3, DEFAULT_SCALE);
  if (!(scale > 0 && scale <= MAX_SCALE)) {
    throw new RequestError(422, 'script_args.3', `script_args.3: scale factor ${scale} is out of range (0, ${MAX_SCALE}]`);
  }
  const { upscaler, label } = chooseUpscaler(args[2], lists);
  // A1111's script enlarges only with a real upscaler: with "None" the image keeps its size and the scale
  // factor is not used.
  if (label === 'None') {
    warnings.push(`script_args.2: upscaler None keeps the image at its size, as A1111's script does (scale factor ${scale} not used)`);
    warnings.push(`script_name: SD upscale redraws the whole image in one img2img pass, not in tiles of width × height (tile overlap ${overlap} not used)`);
    return { scale: 1, overlap, upscaler, upscalerName: label };
  }
  warnings.push(
    `script_name: SD upscale redraws the whole ×${scale} image in one img2img pass, not in tiles of width × height (tile overlap ${overlap} not used)`,
  );
  if (b.resize_mode !== undefined && b.resize_mode !== null && b.resize_mode !== 0) {
    warnings.push(`resize_mode: ${b.resize_mode} not used; SD upscale enlarges the init image with its upscaler`);
  }
  return { scale, overlap, upscaler, upscalerName: label };
}
