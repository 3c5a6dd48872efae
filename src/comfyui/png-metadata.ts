/**
 * PNG text-chunk surgery. ComfyUI's SaveImage embeds `prompt` and `workflow` JSON (tEXt), which contain
 * the per-job `filename_prefix`: two identical renders would differ in bytes. We strip every text chunk
 * and optionally insert our own (A1111's `parameters` infotext) so that same seed → same bytes.
 * Pixel data (IDAT) is never touched, so no re-encoding and no quality change.
 */
import zlib from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const TEXT_CHUNKS = new Set(['tEXt', 'iTXt', 'zTXt']);

export class PngFormatError extends Error {
  constructor(message: string) {
    super(`malformed PNG: ${message}`);
    this.name = 'PngFormatError';
  }
}

interface Chunk {
  type: string;
  /** Whole chunk including length, type, data and CRC. */
  raw: Buffer;
  data: Buffer;
}

function crc32(buf: Buffer): number {
  return zlib.crc32(buf) >>> 0;
}

function parseChunks(png: Buffer): Chunk[] {
  if (!Buffer.isBuffer(png) || png.length < SIGNATURE.length || !png.subarray(0, 8).equals(SIGNATURE)) {
    throw new PngFormatError('bad signature');
  }
  const chunks: Chunk[] = [];
  let off = 8;
  while (off < png.length) {
    if (off + 12 > png.length) throw new PngFormatError(`truncated chunk header at ${off}`);
    const len = png.readUInt32BE(off);
    if (len > 0x7fffffff || off + 12 + len > png.length) throw new PngFormatError(`chunk at ${off} overruns the file`);
    const typeBuf = png.subarray(off + 4, off + 8);
    const type = typeBuf.toString('latin1');
    if (!/^[A-Za-z]{4}$/.test(type)) throw new PngFormatError(`invalid chunk type at ${off}`);
    const data = png.subarray(off + 8, off + 8 + len);
    const crc = png.readUInt32BE(off + 8 + len);
    if (crc32(png.subarray(off + 4, off + 8 + len)) !== crc) throw new PngFormatError(`CRC mismatch in ${type} at ${off}`);
    chunks.push({ type, raw: png.subarray(off, off + 12 + len), data });
    off += 12 + len;
    if (type === 'IEND') break;
  }
  if (off !== png.length) throw new PngFormatError('data after IEND');
  if (chunks[0]?.type !== 'IHDR' || chunks[0].data.length !== 13) throw new PngFormatError('first chunk is not IHDR');
  if (chunks[chunks.length - 1]?.type !== 'IEND') throw new PngFormatError('missing IEND');
  if (!chunks.some((c) => c.type === 'IDAT')) throw new PngFormatError('no IDAT');
  if (chunks.filter((c) => c.type === 'IHDR').length > 1) throw new PngFormatError('more than one IHDR');
  return chunks;
}

function makeChunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

function isLatin1(s: string): boolean {
  // eslint-disable-next-line no-control-regex -- a tEXt chunk holds Latin-1 without NUL; \u0001 is its first legal character
  return /^[\u0001-\u00ff]*$/.test(s);
}

/**
 * tEXt when the text is Latin-1 (what PNG readers expect), else uncompressed UTF-8 iTXt: the same choice
 * PIL's `PngInfo.add_text` makes, which is what A1111 writes.
 */
function textChunk(keyword: string, text: string): Buffer {
  if (keyword.length < 1 || keyword.length > 79 || !isLatin1(keyword) || /^\s|\s$/.test(keyword)) {
    throw new TypeError(`invalid PNG text keyword ${JSON.stringify(keyword)}`);
  }
  const key = Buffer.from(keyword, 'latin1');
  if (isLatin1(text) || text === '') {
    return makeChunk('tEXt', Buffer.concat([key, Buffer.from([0]), Buffer.from(text, 'latin1')]));
  }
  // keyword \0 compression-flag(0) compression-method(0) language-tag \0 translated-keyword \0 text
  return makeChunk('iTXt', Buffer.concat([key, Buffer.from([0, 0, 0, 0, 0]), Buffer.from(text, 'utf8')]));
}

/**
 * Remove all tEXt/iTXt/zTXt chunks and insert `keep` (keyword → text) as text chunks right after IHDR.
 * Throws PngFormatError on anything that is not a well-formed PNG (signature, lengths, CRCs, IHDR/IEND).
 */
export function stripPngText(png: Buffer, keep?: Record<string, string>): Buffer {
  const chunks = parseChunks(png);
  const inserted = Object.entries(keep ?? {}).map(([k, v]) => textChunk(k, v));
  const parts: Buffer[] = [SIGNATURE];
  for (const c of chunks) {
    if (TEXT_CHUNKS.has(c.type)) continue;
    parts.push(c.raw);
    if (c.type === 'IHDR') parts.push(...inserted);
  }
  return Buffer.concat(parts);
}

/**
 * Most bytes the compressed text chunks of one PNG may inflate to, together. A ComfyUI workflow is tens of
 * KB; 255 KB of zTXt inflated to 256 MB before there was a limit.
 */
export const MAX_PNG_TEXT_BYTES = 8 * 1024 * 1024;

/**
 * Text chunks as keyword → text (tEXt, iTXt, zTXt; later chunks win). Compressed chunks inflate with an
 * output limit: whatever they declare, all of them together yield at most `maxTextBytes`.
 */
export function readPngText(png: Buffer, maxTextBytes = MAX_PNG_TEXT_BYTES): Record<string, string> {
  const out: Record<string, string> = {};
  let budget = maxTextBytes;
  const inflate = (data: Buffer, type: string): Buffer => {
    let text: Buffer;
    try {
      text = zlib.inflateSync(data, { maxOutputLength: Math.max(1, budget) });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
        throw new PngFormatError(`text chunks inflate to more than ${maxTextBytes} bytes`);
      }
      throw new PngFormatError(`${type} is not a valid zlib stream`);
    }
    budget -= text.length;
    return text;
  };
  for (const c of parseChunks(png)) {
    if (!TEXT_CHUNKS.has(c.type)) continue;
    const nul = c.data.indexOf(0);
    if (nul < 1) throw new PngFormatError(`${c.type} without keyword`);
    const key = c.data.subarray(0, nul).toString('latin1');
    if (c.type === 'tEXt') {
      out[key] = c.data.subarray(nul + 1).toString('latin1');
    } else if (c.type === 'zTXt') {
      out[key] = inflate(c.data.subarray(nul + 2), c.type).toString('latin1');
    } else {
      const compressed = c.data[nul + 1] === 1;
      let p = nul + 3;
      const langEnd = c.data.indexOf(0, p);
      if (langEnd < 0) throw new PngFormatError('iTXt without language tag');
      const trEnd = c.data.indexOf(0, langEnd + 1);
      if (trEnd < 0) throw new PngFormatError('iTXt without translated keyword');
      p = trEnd + 1;
      const body = c.data.subarray(p);
      out[key] = (compressed ? inflate(body, c.type) : body).toString('utf8');
    }
  }
  return out;
}

/** Width and height from IHDR; validates the signature and the IHDR chunk only (cheap, no CRC walk). */
export function readPngSize(buf: Buffer): { width: number; height: number } {
  if (!Buffer.isBuffer(buf) || buf.length < 33 || !buf.subarray(0, 8).equals(SIGNATURE)) {
    throw new PngFormatError('bad signature or too short');
  }
  if (buf.readUInt32BE(8) !== 13 || buf.subarray(12, 16).toString('latin1') !== 'IHDR') {
    throw new PngFormatError('first chunk is not IHDR');
  }
  const width = buf.readUInt32BE(16);
  const height = buf.readUInt32BE(20);
  if (width === 0 || height === 0) throw new PngFormatError('zero dimension');
  return { width, height };
}
