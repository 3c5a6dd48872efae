/**
 * Inpaint masks. ComfyUI reads the mask with LoadImageMask `red` (white = repaint). A1111 semantics differ
 * in two ways this module reproduces for PNG masks (the usual case): an RGBA mask whose alpha channel is
 * not fully opaque uses its ALPHA as the mask (thresholded at 128 when `mask_round`), otherwise luminance;
 * and `inpainting_mask_invert` flips it. The result is re-encoded as an 8-bit greyscale PNG, so the red
 * channel ComfyUI reads is exactly the mask. JPEG/WebP masks cannot be decoded here and are passed through
 * (their red channel is the mask; correct for black/white masks); inverting them is refused.
 */
import { PNG } from 'pngjs';
import { RequestError } from '../api/a1111/errors.ts';
import { readPngBounded } from './png-bounds.ts';
import { checkImageBytes, type DecodedImage, type ImageLimits } from './decode.ts';

export interface MaskOptions {
  invert: boolean;
  /** A1111 `mask_round`: threshold alpha masks at 128. */
  round: boolean;
}

export function normalizeMask(mask: DecodedImage, field: string, opts: MaskOptions, limits: ImageLimits): DecodedImage {
  if (mask.ref.mime !== 'image/png') {
    if (opts.invert) {
      throw new RequestError(400, 'inpainting_mask_invert', `inpainting_mask_invert: only supported with PNG masks (${field} is ${mask.ref.mime})`);
    }
    return mask;
  }
  let png: PNG;
  try {
    png = readPngBounded(mask.bytes);
  } catch (e) {
    throw new RequestError(400, field, `${field}: corrupt PNG (${(e as Error).message})`);
  }
  const { width, height, data } = png;
  const n = width * height;
  let alphaMask = false;
  for (let i = 0; i < n; i++) {
    if (data[i * 4 + 3]! !== 255) {
      alphaMask = true;
      break;
    }
  }
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    const p = i * 4;
    let v: number;
    if (alphaMask) {
      const a = data[p + 3]!;
      v = opts.round ? (a > 128 ? 255 : 0) : a;
    } else {
      // PIL's "L" conversion (ITU-R 601-2 luma, fixed point), as A1111 uses.
      v = (data[p]! * 19595 + data[p + 1]! * 38470 + data[p + 2]! * 7471 + 0x8000) >> 16;
    }
    out[i] = opts.invert ? 255 - v : v;
  }
  const gray = new PNG({ width, height, colorType: 0, inputColorType: 0, bitDepth: 8, inputHasAlpha: false });
  gray.data = out;
  const bytes = PNG.sync.write(gray, { colorType: 0, inputColorType: 0, bitDepth: 8, inputHasAlpha: false });
  return checkImageBytes(bytes, field, { ...limits, maxImageBytes: Math.max(limits.maxImageBytes, bytes.length) });
}
