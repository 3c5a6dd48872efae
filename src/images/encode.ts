/**
 * Output images in the format A1111's `samples_format` asks for (png, jpg, webp) with its quality options
 * (`jpeg_quality`, `webp_lossless`), through sharp (libvips). The infotext goes where A1111 puts it for
 * these formats: the EXIF UserComment (PNG keeps its `parameters` text chunk, written elsewhere).
 */
import type { OutputFormat } from '../contracts/render.ts';

/**
 * sharp (libvips) loads on first use: most renders answer PNG and never need it, and loading it costs
 * 20–25 MB of RSS for the life of the process (bench/README.md, memory).
 */
let sharpModule: Promise<typeof import('sharp').default> | undefined;
const loadSharp = (): Promise<typeof import('sharp').default> => (sharpModule ??= import('sharp').then((m) => m.default));

export interface EncodedImage {
  data: Buffer;
  mime: string;
  width: number;
  height: number;
}

/** PNG bytes (with their text chunks already set) → the requested lossy or lossless format. */
export async function encodeOutput(png: Buffer, format: OutputFormat, infotext: string): Promise<EncodedImage> {
  // Deterministic: same pixels and options → same bytes (no timestamps in the EXIF written here).
  const sharp = await loadSharp();
  const img = sharp(png).withExif({ IFD2: { UserComment: infotext } });
  const out =
    format.format === 'jpeg'
      ? await img.flatten({ background: '#ffffff' }).jpeg({ quality: format.quality }).toBuffer({ resolveWithObject: true })
      : await img.webp(format.lossless ? { lossless: true } : { quality: format.quality }).toBuffer({ resolveWithObject: true });
  return { data: out.data, mime: format.format === 'jpeg' ? 'image/jpeg' : 'image/webp', width: out.info.width, height: out.info.height };
}

/** The infotext A1111 stores in a JPEG's or WebP's EXIF UserComment, if any. */
export async function readExifComment(data: Buffer, maxPixels: number): Promise<string | undefined> {
  const exif = await readExifBytes(data, maxPixels);
  return exif ? exifUserComment(exif) : undefined;
}

/** A JPEG's or WebP's raw EXIF, found by sharp (headers only, in libvips's threads, the pixel limit held). */
export async function readExifBytes(data: Buffer, maxPixels: number): Promise<Buffer | undefined> {
  const sharp = await loadSharp();
  try {
    return (await sharp(data, { limitInputPixels: maxPixels }).metadata()).exif;
  } catch {
    return undefined;
  }
}

/**
 * The UserComment text of raw EXIF bytes (8-byte character code then the text). The tag is found by its
 * code rather than by walking the IFDs. Linear in the size of `exif`: it comes from request bytes.
 */
export function exifUserComment(exif: Buffer): string | undefined {
  const ascii = exif.indexOf('ASCII\0\0\0', 0, 'latin1');
  if (ascii >= 0) return trimTrailingNuls(exif.subarray(ascii + 8).toString('utf8'));
  const unicode = exif.indexOf('UNICODE\0', 0, 'latin1');
  if (unicode >= 0) {
    const body = exif.subarray(unicode + 8);
    // A1111 (piexif) writes UTF-16 big-endian; an odd trailing byte is not a character (swap16 refuses it).
    const swapped = Buffer.from(body.subarray(0, body.length & ~1));
    swapped.swap16();
    return trimTrailingNuls(swapped.toString('utf16le'));
  }
  return undefined;
}

/** `s` without its trailing NULs, in one backward pass (a regex anchored at the end retries every start). */
export function trimTrailingNuls(s: string): string {
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 0) end--;
  return s.slice(0, end);
}
