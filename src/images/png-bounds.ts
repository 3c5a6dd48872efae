/**
 * PNG decoding with an output limit. A PNG's IHDR says exactly how many bytes its image data inflates to
 * (scanlines plus one filter byte each, per Adam7 pass when interlaced); deflate compresses up to ~1000:1,
 * so a small file may claim 1×1 pixels and carry a gigabyte of zlib data. pngjs inflates interlaced images
 * without any limit, and the byte limit on the file admits ~20 GiB of inflated data. So: walk the chunks,
 * compute the declared size, and inflate with exactly that as the output limit before pngjs ever sees it.
 * Also used for masks, which are decoded a second time to be converted.
 */
import { inflateSync } from 'node:zlib';
import { PNG, type PNGWithMetadata } from 'pngjs';

export class PngBoundsError extends Error {
  override name = 'PngBoundsError';
}

export interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  interlaced: boolean;
}

const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
// Adam7 passes: x start, y start, x step, y step.
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** Bytes the image data of `h` must inflate to: every scanline and its filter byte, per pass. */
export function declaredInflatedBytes(h: PngHeader): number {
  const bitsPerPixel = (CHANNELS[h.colorType] ?? 4) * h.bitDepth;
  const rows = (w: number, n: number): number => (w > 0 && n > 0 ? n * (Math.ceil((w * bitsPerPixel) / 8) + 1) : 0);
  if (!h.interlaced) return rows(h.width, h.height);
  let total = 0;
  for (const [xs, ys, dx, dy] of ADAM7) total += rows(Math.ceil((h.width - xs) / dx), Math.ceil((h.height - ys) / dy));
  return total;
}

/** The header and the concatenated IDAT payload, from the chunk structure alone (no inflating). */
export function readPngChunks(bytes: Buffer): { header: PngHeader; idat: Buffer } {
  let header: PngHeader | undefined;
  const idat: Buffer[] = [];
  let off = 8;
  while (off + 8 <= bytes.length) {
    const len = bytes.readUInt32BE(off);
    const type = bytes.toString('latin1', off + 4, off + 8);
    const start = off + 8;
    if (start + len + 4 > bytes.length) throw new PngBoundsError(`chunk ${JSON.stringify(type)} is truncated`);
    if (type === 'IHDR') {
      if (len < 13) throw new PngBoundsError('IHDR chunk is too short');
      header = {
        width: bytes.readUInt32BE(start),
        height: bytes.readUInt32BE(start + 4),
        bitDepth: bytes[start + 8]!,
        colorType: bytes[start + 9]!,
        interlaced: bytes[start + 12] === 1,
      };
    } else if (type === 'IDAT') {
      idat.push(bytes.subarray(start, start + len));
    } else if (type === 'IEND') {
      break;
    }
    off = start + len + 4;
  }
  if (!header) throw new PngBoundsError('no IHDR chunk');
  return { header, idat: Buffer.concat(idat) };
}

/**
 * Decodes a PNG (pngjs: CRCs, filters, the zlib stream), after checking that its image data inflates to no
 * more than its header declares. Throws PngBoundsError, or pngjs's error for other corruption.
 */
export function readPngBounded(bytes: Buffer): PNGWithMetadata {
  const { header, idat } = readPngChunks(bytes);
  const limit = declaredInflatedBytes(header);
  try {
    inflateSync(idat, { maxOutputLength: Math.max(1, limit) });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new PngBoundsError(`image data inflates to more than the ${limit} bytes its ${header.width}x${header.height} header declares`);
    }
    // Anything else (a bad zlib stream) is for pngjs to name.
  }
  return PNG.sync.read(bytes);
}
