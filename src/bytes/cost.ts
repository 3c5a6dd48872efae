/**
 * What a byte task costs, read before it is queued: the pixels its images declare, not the bytes of the body.
 * A one-colour 16 Mpx PNG is 65 KB and seconds of inflating, filtering and resizing; a 64×64 photo is 10 KB and
 * a millisecond. Only the header is read (the first 64 KiB at most, on the event loop: microseconds); an image
 * whose size cannot be read there is charged as the largest image allowed.
 */
import { imageSize } from 'image-size';

/** Bytes of an image read for its header: enough for a JPEG's frame header behind its EXIF and ICC blocks. */
const HEADER_BYTES = 64 * 1024;
const BASE64_CHARS = (HEADER_BYTES / 3) * 4;

/** Tasks above this many pixels are heavy: they share fewer workers (pool.ts). About a 1024×1024 image. */
export const HEAVY_TASK_PIXELS = 1024 * 1024;

function headerOf(value: string | Uint8Array): Uint8Array {
  if (typeof value !== 'string') return value.subarray(0, HEADER_BYTES);
  const comma = value.startsWith('data:') ? value.indexOf(',') : -1;
  const start = comma >= 0 ? comma + 1 : 0;
  const text = value.slice(start, start + BASE64_CHARS);
  return Buffer.from(text.slice(0, text.length - (text.length % 4)), 'base64');
}

/** The pixels an image (base64 / data URL text, or bytes) declares; `unknown` when its header does not say. */
export function declaredPixels(value: string | Uint8Array, unknown: number): number {
  try {
    const { width, height } = imageSize(headerOf(value));
    return width && height ? width * height : unknown;
  } catch {
    return unknown;
  }
}
