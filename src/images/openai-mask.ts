/**
 * OpenAI's edit mask → this service's inpaint mask. OpenAI marks the area to edit with TRANSPARENCY (alpha 0
 * = edit, opaque = keep); the render graphs read white = repaint. The result is an 8-bit greyscale PNG in the
 * service's convention, which the A1111 path then resizes to the image like any mask. A mask with no
 * transparent pixel at all cannot mean anything in OpenAI's convention (it would edit nothing), so it is
 * read in the service's own (white = repaint) and said so in a warning.
 */
import { PNG } from 'pngjs';
import { RequestError } from '../errors/request-error.ts';
import { sniffImageMime } from './decode.ts';
import { readMaskPng } from './mask.ts';

/** Alpha below this counts as transparent (OpenAI: "fully transparent areas"; soft edges round to the nearer). */
const TRANSPARENT_BELOW = 128;

export interface ConvertedMask {
  /** Greyscale PNG, white = repaint. */
  png: Buffer;
  warning?: string;
}

export function convertOpenAiMask(bytes: Buffer, field = 'mask'): ConvertedMask {
  const mime = sniffImageMime(bytes);
  if (mime !== 'image/png') {
    throw new RequestError(400, field, `${field}: must be a PNG whose transparent pixels mark the area to edit (got ${mime ?? 'no image'})`);
  }
  const png = readMaskPng(bytes, field);
  const { width, height, data } = png;
  const n = width * height;
  let transparent = false;
  for (let i = 0; i < n; i++) {
    if (data[i * 4 + 3]! < TRANSPARENT_BELOW) {
      transparent = true;
      break;
    }
  }
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    const p = i * 4;
    if (transparent) out[i] = data[p + 3]! < TRANSPARENT_BELOW ? 255 : 0;
    // PIL's "L" luma, as the A1111 path reads an opaque mask.
    else out[i] = (data[p]! * 19595 + data[p + 1]! * 38470 + data[p + 2]! * 7471 + 0x8000) >> 16;
  }
  const gray = new PNG({ width, height, colorType: 0, inputColorType: 0, bitDepth: 8, inputHasAlpha: false });
  gray.data = out;
  const result = PNG.sync.write(gray, { colorType: 0, inputColorType: 0, bitDepth: 8, inputHasAlpha: false });
  return transparent
    ? { png: result }
    : { png: result, warning: `${field}: has no transparent pixels (OpenAI marks the area to edit with transparency); read as white = edit, black = keep` };
}
