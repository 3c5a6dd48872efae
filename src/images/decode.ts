/**
 * Decoding and checking of input images (A1111 `init_images`, `mask`, `extra_images`): raw base64 or a
 * `data:image/...;base64,` URL; PNG, JPEG or WebP recognised by magic bytes (not by what the data URL
 * claims); size and pixel limits; sha256 for content-addressed storage. URLs are refused: fetching them
 * would let any client make the server reach into its own network.
 */
import { createHash } from 'node:crypto';
import { imageSize } from 'image-size';
import { RequestError } from '../errors/request-error.ts';
import type { BlobRef } from '../contracts/render.ts';
import { assertPngIntact, checkPngIntactStreaming, PngBoundsError, readPngChunks } from './png-bounds.ts';
export { extensionForMime } from './mime.ts';

export interface ImageLimits {
  /** Largest decoded image in bytes (413 above). */
  maxImageBytes: number;
  /** Largest width × height (413 above): decoders allocate per pixel, not per byte. */
  maxImagePixels: number;
}

/** A checked input image: its blob reference and the bytes to store under `ref.sha256`. */
export interface DecodedImage {
  ref: BlobRef;
  bytes: Buffer;
}

export type ImageMime = 'image/png' | 'image/jpeg' | 'image/webp';

/** The image type of `bytes` by magic number, or undefined for anything else. */
export function sniffImageMime(bytes: Uint8Array): ImageMime | undefined {
  const b = bytes;
  if (b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47 && b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a) {
    return 'image/png';
  }
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 12 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

function ascii(b: Uint8Array, from: number, to: number): string {
  return String.fromCharCode(...b.subarray(from, to));
}

// Standard and URL-safe alphabets; padding optional (A1111 decodes non-strictly, so do clients' encoders).
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * Decodes one input image and checks it. Throws RequestError naming `field`:
 * 400 for URLs, bad base64 and non-images, 413 for images over the byte or pixel limit.
 * Runs on the calling thread: the service calls decodeImageInputStreaming, in a byte worker (src/bytes/).
 */
export function decodeImageInput(value: string, field: string, limits: ImageLimits): DecodedImage {
  return checkImageBytes(decodeBase64Image(value, field, limits), field, limits);
}

/** decodeImageInput with the PNG inflate streamed (bounded memory whatever the header declares). */
export async function decodeImageInputStreaming(value: string, field: string, limits: ImageLimits): Promise<DecodedImage> {
  return checkImageBytesStreaming(decodeBase64Image(value, field, limits), field, limits);
}

/** The bytes of a base64 or data: URL image, refused (RequestError naming `field`) before decoding when over the limit. */
function decodeBase64Image(value: string, field: string, limits: ImageLimits): Buffer {
  let payload = value.trim();
  if (/^https?:\/\//i.test(payload)) {
    throw new RequestError(400, field, `${field}: image URLs are not accepted (URL fetching is disabled); send the image as base64 or a data: URL`);
  }
  if (/^data:/i.test(payload)) {
    const m = /^data:([^;,]*)((?:;[^;,]*)*),/i.exec(payload);
    if (!m || !/^image\//i.test(m[1] ?? '') || !/;base64$/i.test(m[2] ?? '')) {
      throw new RequestError(400, field, `${field}: only data:image/...;base64, URLs are accepted`);
    }
    payload = payload.slice(m[0].length);
  }
  payload = payload.replace(/\s+/g, '');
  if (payload.length === 0) throw new RequestError(400, field, `${field}: empty image`);
  // Refuse before decoding: 4 base64 characters carry 3 bytes.
  const estimated = Math.floor((payload.length * 3) / 4) - (payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0);
  if (estimated > limits.maxImageBytes) {
    throw new RequestError(413, field, `${field}: image of about ${estimated} bytes exceeds the limit of ${limits.maxImageBytes} bytes`, {
      limit: limits.maxImageBytes,
    });
  }
  if (!BASE64.test(payload) || payload.length % 4 === 1) {
    throw new RequestError(400, field, `${field}: not valid base64`);
  }
  return Buffer.from(payload.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

/** Checks already-decoded bytes (type, dimensions, limits, completeness) and builds the blob reference. */
export function checkImageBytes(bytes: Buffer, field: string, limits: ImageLimits): DecodedImage {
  const { mime, width, height } = checkImageHeader(bytes, field, limits);
  assertComplete(bytes, mime, field);
  return decodedImage(bytes, mime, width, height);
}

/** checkImageBytes with the PNG inflate streamed through zlib's thread pool, 64 KiB at a time. */
export async function checkImageBytesStreaming(bytes: Buffer, field: string, limits: ImageLimits): Promise<DecodedImage> {
  const { mime, width, height } = checkImageHeader(bytes, field, limits);
  if (mime === 'image/png') {
    try {
      await checkPngIntactStreaming(bytes);
    } catch (err) {
      throw new RequestError(400, field, `${field}: corrupt ${mime} image (${(err as Error).message})`);
    }
  } else assertComplete(bytes, mime, field);
  return decodedImage(bytes, mime, width, height);
}

function decodedImage(bytes: Buffer, mime: ImageMime, width: number, height: number): DecodedImage {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  return { ref: { sha256, size: bytes.length, mime, width, height }, bytes };
}

/** Type, dimensions and limits, from the header alone (for a PNG, the one IHDR its inflate bound uses too). */
function checkImageHeader(bytes: Buffer, field: string, limits: ImageLimits): { mime: ImageMime; width: number; height: number } {
  if (bytes.length > limits.maxImageBytes) {
    throw new RequestError(413, field, `${field}: image of ${bytes.length} bytes exceeds the limit of ${limits.maxImageBytes} bytes`, {
      limit: limits.maxImageBytes,
    });
  }
  const mime = sniffImageMime(bytes);
  if (!mime) throw new RequestError(400, field, `${field}: not a PNG, JPEG or WebP image`);
  let width: number | undefined;
  let height: number | undefined;
  try {
    // A PNG's size comes from the one header the inflate bound uses too (readPngChunks refuses a second).
    ({ width, height } = mime === 'image/png' ? readPngChunks(bytes).header : imageSize(bytes));
  } catch (err) {
    if (err instanceof PngBoundsError) throw new RequestError(400, field, `${field}: corrupt ${mime} image (${err.message})`);
  }
  if (!width || !height) throw new RequestError(400, field, `${field}: corrupt ${mime} image (no readable dimensions)`);
  if (width * height > limits.maxImagePixels) {
    throw new RequestError(413, field, `${field}: image of ${width}x${height} pixels exceeds the limit of ${limits.maxImagePixels} pixels`, {
      limit: limits.maxImagePixels,
    });
  }
  return { mime, width, height };
}

/**
 * A readable header is not a readable image: a truncated or corrupt file would pass the checks above, be
 * stored and uploaded, and then fail inside ComfyUI's LoadImage as a 500 after a workflow started (the
 * fuzzer found exactly that). PNGs are checked in full without decoding their pixels (CRCs, the zlib stream
 * inflated to exactly the size the header declares and never more, scanline filters: png-bounds.ts, since a
 * 1×1 PNG may carry a gigabyte of zlib data); JPEG and WebP, which we cannot decode here, are checked for
 * their end marker and their declared length.
 */
function assertComplete(bytes: Buffer, mime: string, field: string): void {
  const corrupt = (why: string): RequestError => new RequestError(400, field, `${field}: corrupt ${mime} image (${why})`);
  if (mime === 'image/png') {
    try {
      assertPngIntact(bytes);
    } catch (err) {
      throw corrupt((err as Error).message);
    }
  } else if (mime === 'image/jpeg') {
    // End-of-image marker, allowing the trailing padding some encoders write.
    const tail = bytes.subarray(Math.max(0, bytes.length - 256));
    if (tail.lastIndexOf(Buffer.from([0xff, 0xd9])) === -1) throw corrupt('truncated: no end-of-image marker');
    if (bytes.indexOf(Buffer.from([0xff, 0xda])) === -1) throw corrupt('no image data');
  } else if (mime === 'image/webp') {
    const declared = bytes.length >= 8 ? bytes.readUInt32LE(4) + 8 : Infinity;
    if (declared > bytes.length) throw corrupt(`truncated: ${bytes.length} of ${declared} bytes`);
  }
}
