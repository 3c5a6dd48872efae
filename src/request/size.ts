/**
 * Output size of a neutral request: the requested width and height snapped to the model's latent grid and
 * fitted into the pixel budget (the hires fix and SD upscale snap their target sizes with the same fitSize).
 */
import type { ModelProfile } from '../models/profile.ts';
import { fitOnGrid } from '../models/fit-size.ts';
import { RequestError } from '../errors/request-error.ts';
import { sizeFieldLabel, type FieldNames } from './fields.ts';

/** The part of ResolveLimits that sizes depend on. */
export interface PixelLimits {
  /** Pixel budget of one output image; absent: the model's own `maxPixels`. */
  maxRenderPixels?: number;
}

export interface Size {
  width: number;
  height: number;
  requestedWidth: number;
  requestedHeight: number;
}

/**
 * Any integer size in range renders, as in A1111 (which never refuses a size: it rounds to its grid). The
 * size snaps to the nearest multiple of the model's latent grid (halfway rounds up, so a multiple of 8 that
 * is not one of 16 grows rather than shrinks), and the snap is reported in `info` and `info.warnings`.
 * Only sizes outside the model's side range or the pixel budget are refused, naming the field.
 */
export function snapSize(profile: ModelProfile, field: string, requested: number, warnings: string[]): number {
  if (requested < 1 || requested > profile.maxSide) {
    throw new RequestError(400, field, `${field}: ${requested} is out of range 1..${profile.maxSide} for ${profile.id}`, {
      min: 1,
      max: profile.maxSide,
    });
  }
  const grid = profile.grid;
  const snapped = Math.min(Math.floor(profile.maxSide / grid) * grid, Math.max(profile.minSide, Math.floor(requested / grid + 0.5) * grid));
  if (snapped !== requested) {
    warnings.push(`${field}: ${requested} snapped to ${snapped} (${profile.id} renders on a ${grid} px grid, at least ${profile.minSide} px)`);
  }
  return snapped;
}

/** The pixel budget of one output image: the configured one, else the model's own. */
export function pixelBudget(profile: ModelProfile, limits: PixelLimits): number {
  return limits.maxRenderPixels ?? profile.maxPixels;
}

/**
 * A requested width × height as rendered: each side snapped to the grid (snapSize, said in warnings); when
 * that breaks the pixel budget or a side is over the model's maximum, the size is scaled down keeping its
 * aspect ratio to the nearest grid size that fits (said in warnings). Refused only when nothing fits.
 */
export function fitSize(
  profile: ModelProfile,
  limits: PixelLimits,
  fields: { width: string; height: string },
  requested: { width: number; height: number },
  warnings: string[],
): { width: number; height: number } {
  for (const side of ['width', 'height'] as const) {
    if (!(requested[side] >= 1)) {
      throw new RequestError(400, fields[side], `${fields[side]}: ${requested[side]} is out of range 1..${profile.maxSide} for ${profile.id}`, {
        min: 1,
        max: profile.maxSide,
      });
    }
  }
  const budget = pixelBudget(profile, limits);
  const inSide = requested.width <= profile.maxSide && requested.height <= profile.maxSide;
  if (inSide) {
    const snapped = { width: snapSize(profile, fields.width, requested.width, []), height: snapSize(profile, fields.height, requested.height, []) };
    if (snapped.width * snapped.height <= budget) {
      // Within limits: only the grid snap, said per field as before.
      snapSize(profile, fields.width, requested.width, warnings);
      snapSize(profile, fields.height, requested.height, warnings);
      return snapped;
    }
  }
  const fit = fitOnGrid(requested.width, requested.height, { grid: profile.grid, minSide: profile.minSide, maxSide: profile.maxSide, maxPixels: budget });
  if (!fit) {
    throw new RequestError(400, fields.width, `${fields.width}: no ${profile.grid} px grid size of ${profile.id} fits the budget of ${budget} pixels`, {
      maxPixels: budget,
    });
  }
  warnings.push(
    `${sizeFieldLabel(fields)}: ${requested.width}x${requested.height} scaled down to ${fit.width}x${fit.height} (keeping the aspect ratio) to fit ${profile.id}'s budget of ${budget} pixels and ${profile.maxSide} px sides`,
  );
  return { width: fit.width, height: fit.height };
}

export function chooseSize(
  r: { width?: number | undefined; height?: number | undefined; names: Pick<FieldNames, 'width' | 'height'> },
  profile: ModelProfile,
  limits: PixelLimits,
  warnings: string[],
): Size {
  const requestedWidth = r.width ?? profile.defaults.width;
  const requestedHeight = r.height ?? profile.defaults.height;
  const fields = { width: r.names.width, height: r.names.height };
  const { width, height } = fitSize(profile, limits, fields, { width: requestedWidth, height: requestedHeight }, warnings);
  return { width, height, requestedWidth, requestedHeight };
}

/**
 * An image's own size as the output size (OpenAI's `size: auto`): scaled down into the model's sides and
 * pixel budget, keeping its aspect, each side floored onto the grid. Undefined when the image has no size.
 */
export function sizeOfImage(image: { width?: number | undefined; height?: number | undefined }, profile: ModelProfile, limits: PixelLimits): Size | undefined {
  const { width: w, height: h } = image;
  if (!w || !h) return undefined;
  const scale = Math.min(1, Math.sqrt(pixelBudget(profile, limits) / (w * h)), profile.maxSide / w, profile.maxSide / h);
  const fit = (v: number): number => Math.max(profile.minSide, Math.floor((v * scale) / profile.grid) * profile.grid);
  const width = fit(w);
  const height = fit(h);
  return { width, height, requestedWidth: width, requestedHeight: height };
}
