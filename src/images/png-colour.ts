/**
 * Whether a PNG is of one colour (alpha aside), and whether that colour is black: the blank-output check of
 * every rendered image (a black one is a VAE that produced NaNs).
 *
 * Read here, not by sharp: loading libvips for this alone cost the worker thread ~11 MB of idle RSS and ~14 MB
 * at the peak of 100 concurrent img2img (its library pages, its thread pool and caches; bench/README.md,
 * issue 25, fifth pass), for a check that needs only zlib and the five PNG row filters.
 *
 * Nearly every render settles it in its first rows: only those are inflated (a prefix of the zlib stream)
 * and unfiltered, under a millisecond. Only an image of one colour in its top rows is read whole, through
 * zlib's thread pool and with its declared size as the output limit, so the verdict is the whole image's.
 * Interlaced, palette and sub-byte images (never written by ComfyUI's savers) are decoded by pngjs instead.
 * The header's size is the file's own word: an image that declares more than the whole reads allow (an 8K
 * upscale is ~200 MB inflated) is not judged, rather than inflated to whatever it claims.
 */
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { declaredInflatedBytes, readPngBounded, readPngChunks, type PngHeader } from './png-bounds.ts';

export type OneColour = 'black' | 'uniform';

/** Rows read first: a render of two colours nearly always shows both here. */
const TOP_ROWS = 8;
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };
/** Colour channels of each colour type (grey + alpha, RGBA: the alpha channel is not colour). */
const COLOUR_CHANNELS: Record<number, number> = { 0: 1, 2: 3, 4: 1, 6: 3 };
const inflate = promisify(zlib.inflate);
const DEFLATE_MAX_RATIO = 1032;
/** The largest image read whole: 512 MiB inflated (8192² RGB at 16 bits is 403 MB). */
const MAX_WHOLE_BYTES = 512 * 1024 * 1024;
/** pngjs decodes on the calling thread's event loop (the worker thread's, with the heartbeats): far less. */
const MAX_PNGJS_PIXELS = 16 * 1024 * 1024;

/**
 * 'black' or 'uniform' when every pixel has the same colour, else undefined (also for an image too large to
 * read whole whose top rows are of one colour). Throws on a PNG that does not decode.
 */
export async function pngOneColour(png: Buffer): Promise<OneColour | undefined> {
  const { header, idat } = readPngChunks(png);
  if (header.interlaced || header.bitDepth < 8 || CHANNELS[header.colorType] === undefined) {
    return header.width * header.height <= MAX_PNGJS_PIXELS ? pngjsOneColour(png) : undefined;
  }
  const layout = rowLayout(header);
  const topRows = Math.min(TOP_ROWS, header.height);
  const declared = declaredInflatedBytes(header);
  const top = new RowReader(layout).read(inflatePrefix(idat, topRows * (layout.rowBytes + 1), declared), topRows);
  if (top === 'varies' || topRows === header.height) return verdict(top);
  if (declared > MAX_WHOLE_BYTES) return undefined;
  const whole = await inflate(idat, { maxOutputLength: declared });
  return verdict(new RowReader(layout).read(whole, header.height));
}

interface RowLayout {
  rowBytes: number;
  /** Bytes per pixel (the filters' unit), and the leading bytes of each pixel that are its colour. */
  pixelBytes: number;
  colourBytes: number;
}

function rowLayout(h: PngHeader): RowLayout {
  const sampleBytes = h.bitDepth / 8;
  const pixelBytes = CHANNELS[h.colorType]! * sampleBytes;
  return { rowBytes: h.width * pixelBytes, pixelBytes, colourBytes: COLOUR_CHANNELS[h.colorType]! * sampleBytes };
}

/** The colour every pixel read has (its bytes), or 'varies'. */
type RowsColour = Uint8Array | 'varies';

function verdict(c: RowsColour): OneColour | undefined {
  if (c === 'varies') return undefined;
  return c.every((b) => b === 0) ? 'black' : 'uniform';
}

/**
 * At least `need` bytes of the inflated stream (or all of it), from as short a prefix of the compressed data
 * as gives them: the top rows of a large image without inflating the rest.
 */
function inflatePrefix(idat: Buffer, need: number, declared: number): Buffer {
  for (let take = Math.min(idat.length, 256); ; take = Math.min(idat.length, take * 4)) {
    // Deflate expands at most ~1032:1, so this output limit is never what stops a prefix: the declared size is.
    const limit = Math.min(declared, take * DEFLATE_MAX_RATIO + 1024);
    const out = zlib.inflateSync(idat.subarray(0, take), { finishFlush: zlib.constants.Z_SYNC_FLUSH, maxOutputLength: limit });
    if (out.length >= need || take === idat.length) return out;
  }
}

/**
 * Every row of a non-interlaced 8- or 16-bit PNG, unfiltered: its samples as stored (16-bit ones big-endian).
 * The row decoding pngOneColour relies on, for the tests that hold it to another decoder.
 */
export function pngScanlines(png: Buffer): Buffer {
  const { header, idat } = readPngChunks(png);
  if (header.interlaced || header.bitDepth < 8 || CHANNELS[header.colorType] === undefined) throw new Error('interlaced, palette or sub-byte PNG');
  const { rowBytes, pixelBytes } = rowLayout(header);
  const data = zlib.inflateSync(idat, { maxOutputLength: declaredInflatedBytes(header) });
  const out = Buffer.alloc(rowBytes * header.height);
  let above = new Uint8Array(rowBytes);
  for (let y = 0; y < header.height; y++) {
    const at = y * (rowBytes + 1);
    const row = out.subarray(y * rowBytes, (y + 1) * rowBytes);
    unfilter(data[at]!, data.subarray(at + 1, at + 1 + rowBytes), row, above, pixelBytes);
    above = row;
  }
  return out;
}

/** Unfilters scanlines (PNG filter method 0) and compares each pixel's colour with the first pixel's. */
class RowReader {
  private prev: Uint8Array;
  private cur: Uint8Array;

  constructor(private readonly layout: RowLayout) {
    this.prev = new Uint8Array(layout.rowBytes);
    this.cur = new Uint8Array(layout.rowBytes);
  }

  read(data: Buffer, rows: number): RowsColour {
    const { rowBytes, pixelBytes, colourBytes } = this.layout;
    if (data.length < rows * (rowBytes + 1)) throw new Error(`PNG image data ends after ${data.length} bytes, short of ${rows} rows`);
    let first: Uint8Array | undefined;
    for (let y = 0; y < rows; y++) {
      const at = y * (rowBytes + 1);
      unfilter(data[at]!, data.subarray(at + 1, at + 1 + rowBytes), this.cur, this.prev, pixelBytes);
      first ??= this.cur.slice(0, colourBytes);
      for (let p = 0; p < rowBytes; p += pixelBytes) {
        for (let c = 0; c < colourBytes; c++) if (this.cur[p + c] !== first[c]) return 'varies';
      }
      [this.prev, this.cur] = [this.cur, this.prev];
    }
    return first ?? new Uint8Array(colourBytes);
  }
}

/** One scanline's filter undone into `out`, given the row above (zeros for the first row). */
function unfilter(type: number, line: Uint8Array, out: Uint8Array, above: Uint8Array, bpp: number): void {
  const n = line.length;
  switch (type) {
    case 0:
      out.set(line);
      return;
    case 1:
      for (let i = 0; i < n; i++) out[i] = (line[i]! + (i >= bpp ? out[i - bpp]! : 0)) & 0xff;
      return;
    case 2:
      for (let i = 0; i < n; i++) out[i] = (line[i]! + above[i]!) & 0xff;
      return;
    case 3:
      for (let i = 0; i < n; i++) out[i] = (line[i]! + (((i >= bpp ? out[i - bpp]! : 0) + above[i]!) >> 1)) & 0xff;
      return;
    case 4:
      for (let i = 0; i < n; i++) {
        const a = i >= bpp ? out[i - bpp]! : 0;
        const b = above[i]!;
        const c = i >= bpp ? above[i - bpp]! : 0;
        out[i] = (line[i]! + paeth(a, b, c)) & 0xff;
      }
      return;
    default:
      throw new Error(`PNG scanline filter ${type} is not one of 0-4`);
  }
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Interlaced, palette and sub-byte images: pngjs decodes them to 8-bit RGBA, its inflate bounded (png-bounds.ts). */
function pngjsOneColour(png: Buffer): OneColour | undefined {
  const { data } = readPngBounded(png);
  for (let p = 4; p < data.length; p += 4) {
    if (data[p] !== data[0] || data[p + 1] !== data[1] || data[p + 2] !== data[2]) return undefined;
  }
  return data[0] === 0 && data[1] === 0 && data[2] === 0 ? 'black' : 'uniform';
}
