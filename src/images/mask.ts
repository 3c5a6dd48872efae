/**
 * Inpaint masks. ComfyUI reads the mask with LoadImageMask `red` (white = repaint). A1111 semantics differ
 * in two ways this module reproduces for PNG masks (the usual case): an RGBA mask whose alpha channel is
 * not fully opaque uses its ALPHA as the mask (thresholded at 128 when `mask_round`), otherwise luminance;
 * and `inpainting_mask_invert` flips it. The result is re-encoded as an 8-bit greyscale PNG, so the red
 * channel ComfyUI reads is exactly the mask. JPEG/WebP masks cannot be decoded here and are passed through
 * (their red channel is the mask; correct for black/white masks); inverting them is refused.
 */
import { PNG } from 'pngjs';
import { RequestError } from '../errors/request-error.ts';
import { readPngBounded } from './png-bounds.ts';
import { checkImageBytes, type DecodedImage, type ImageLimits } from './decode.ts';

export interface MaskOptions {
  invert: boolean;
  /** A1111 `mask_round`: threshold alpha masks at 128. */
  round: boolean;
  /**
   * The init image's size. A1111 resizes the mask to the render size like the init image (resize mode
   * "just resize"); resizing it to the init image's size here keeps the two aligned through the graph's own
   * scaling. Only PNG masks can be resized: another format of another size is refused.
   */
  size?: { width: number; height: number };
}

export function normalizeMask(mask: DecodedImage, field: string, opts: MaskOptions, limits: ImageLimits): DecodedImage {
  const target = opts.size;
  const sameSize = !target || (target.width === mask.ref.width && target.height === mask.ref.height);
  if (mask.ref.mime !== 'image/png') {
    if (!sameSize) {
      throw new RequestError(
        400,
        field,
        `${field}: a ${mask.ref.mime} mask of ${mask.ref.width}x${mask.ref.height} does not match the init image's ${target.width}x${target.height}; send a mask of the same size, or a PNG (which is resized)`,
      );
    }
    if (opts.invert) {
      throw new RequestError(400, 'inpainting_mask_invert', `inpainting_mask_invert: only supported with PNG masks (${field} is ${mask.ref.mime})`);
    }
    return mask;
  }
  const png = readMaskPng(mask.bytes, field);
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
  const outW = target?.width ?? width;
  const outH = target?.height ?? height;
  const gray = new PNG({ width: outW, height: outH, colorType: 0, inputColorType: 0, bitDepth: 8, inputHasAlpha: false });
  gray.data = sameSize ? out : resizeBilinear(out, width, height, outW, outH);
  const bytes = PNG.sync.write(gray, { colorType: 0, inputColorType: 0, bitDepth: 8, inputHasAlpha: false });
  return checkImageBytes(bytes, field, { ...limits, maxImageBytes: Math.max(limits.maxImageBytes, bytes.length) });
}

/** One-channel bilinear resize (pixel centres aligned, as PIL does), for masks. */
export function resizeBilinear(src: Buffer, w: number, h: number, outW: number, outH: number): Buffer {
  const dst = Buffer.alloc(outW * outH);
  const sx = w / outW;
  const sy = h / outH;
  for (let y = 0; y < outH; y++) {
    const fy = Math.min(Math.max((y + 0.5) * sy - 0.5, 0), h - 1);
    const y0 = Math.floor(fy);
    const y1 = Math.min(y0 + 1, h - 1);
    const ty = fy - y0;
    for (let x = 0; x < outW; x++) {
      const fx = Math.min(Math.max((x + 0.5) * sx - 0.5, 0), w - 1);
      const x0 = Math.floor(fx);
      const x1 = Math.min(x0 + 1, w - 1);
      const tx = fx - x0;
      const top = src[y0 * w + x0]! * (1 - tx) + src[y0 * w + x1]! * tx;
      const bottom = src[y1 * w + x0]! * (1 - tx) + src[y1 * w + x1]! * tx;
      dst[y * outW + x] = Math.round(top * (1 - ty) + bottom * ty);
    }
  }
  return dst;
}

/** A mask's PNG, decoded within the pixel bounds; a corrupt one is a 400 naming its field. */
export function readMaskPng(bytes: Buffer, field: string): PNG {
  try {
    return readPngBounded(bytes);
  } catch (e) {
    throw new RequestError(400, field, `${field}: corrupt PNG (${(e as Error).message})`);
  }
}
