/**
 * The output of an SD upscale (A1111's img2img script: the init image enlarged by an upscaler, then redrawn):
 * its size comes from the init image, and it answers one image per iteration.
 */
import type { SdUpscale } from '../contracts/render.ts';
import type { ModelProfile } from '../models/profile.ts';
import type { SdUpscaleAsk } from './neutral.ts';
import { fitSize, type PixelLimits, type Size } from './size.ts';

/** A1111's SD upscale answers one image per n_iter: its batch_size only groups the tiles it redraws. */
export function sdUpscaleBatch<B extends { batchSize: number; nIter: number; count: number }>(
  batch: B,
  sdUpscale: SdUpscaleAsk | undefined,
  batchSizeField: string,
  warnings: string[],
): B {
  if (!sdUpscale || batch.batchSize === 1) return batch;
  warnings.push(`${batchSizeField}: ${batch.batchSize} not used; SD upscale answers one image per n_iter (A1111 batches its tiles by it)`);
  return { ...batch, batchSize: 1, count: batch.nIter };
}

/**
 * SD upscale's output: the init image × scale, fitted to the model's grid and budget like any size. An upscale
 * model runs on the whole init image at its own factor, so it is used only when the output is larger than the
 * init image (A1111 runs it only to enlarge): a 16 Mpx init through a 4× model would be a 256 Mpx intermediate.
 */
export function sdUpscaleOutput(
  ask: SdUpscaleAsk,
  init: { width?: number; height?: number },
  fallback: { width: number; height: number },
  fit: { profile: ModelProfile; limits: PixelLimits; warnings: string[] },
): { size: Size; sdUpscale: SdUpscale } {
  const sdUpscale = ask.spec;
  const initWidth = init.width ?? fallback.width;
  const initHeight = init.height ?? fallback.height;
  const requestedWidth = Math.max(1, Math.round(initWidth * sdUpscale.scale));
  const requestedHeight = Math.max(1, Math.round(initHeight * sdUpscale.scale));
  const field = ask.names.scale;
  const fitted = fitSize(fit.profile, fit.limits, { width: field, height: field }, { width: requestedWidth, height: requestedHeight }, fit.warnings);
  const size = { ...fitted, requestedWidth, requestedHeight };
  // The model's work is bounded by the output, not the input: it runs only when the output is larger than
  // the init image in both directions (so the init has fewer pixels than the output). An 8×2 000 000 sliver
  // "enlarged" to a fitted 64×… output is wider but far smaller: through a 4× model it would be 256 Mpx.
  if (sdUpscale.upscaler.kind !== 'model' || (fitted.width > initWidth && fitted.height > initHeight)) return { size, sdUpscale };
  fit.warnings.push(
    `${ask.names.upscaler}: the output (${fitted.width}x${fitted.height}) is not larger than the init image (${initWidth}x${initHeight}) in both directions: resized with Lanczos, the upscale model ${sdUpscale.upscalerName} not run`,
  );
  return { size, sdUpscale: { ...sdUpscale, upscaler: { kind: 'pixel', method: 'lanczos' } } };
}
