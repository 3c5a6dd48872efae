/**
 * Hostile request bytes, one builder per finding of a red-team review, built in-process (no binary files).
 * Each returns what a client would send; the regression tests (test/unit/hostile-bytes.test.ts) and the
 * fuzzer seed from them. Large zlib streams are deflated in pieces (bounded memory) and cached.
 */
import { once } from 'node:events';
import { crc32, createDeflate } from 'node:zlib';
import sharp from 'sharp';
import { makePng } from './fixtures.ts';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

export function ihdr(width: number, height: number, bitDepth = 8, colorType = 6): Buffer {
  const d = Buffer.alloc(13);
  d.writeUInt32BE(width, 0);
  d.writeUInt32BE(height, 4);
  d[8] = bitDepth;
  d[9] = colorType;
  return pngChunk('IHDR', d);
}

/** A PNG from its chunks (signature and IEND added). */
export function pngOf(...chunks: Buffer[]): Buffer {
  return Buffer.concat([SIGNATURE, ...chunks, pngChunk('IEND', Buffer.alloc(0))]);
}

/** IDAT chunks (64 KiB each) of a zlib stream. */
export function idats(z: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < z.length; off += 65_536) out.push(pngChunk('IDAT', z.subarray(off, off + 65_536)));
  return out;
}

const zeroStreams = new Map<number, Promise<Buffer>>();
/** The zlib stream of `n` zero bytes, deflated 1 MiB at a time (a 256 MiB stream never exists whole). */
export function deflatedZeros(n: number): Promise<Buffer> {
  let p = zeroStreams.get(n);
  if (!p) {
    p = (async () => {
      const z = createDeflate({ level: 9 });
      const out: Buffer[] = [];
      z.on('data', (c: Buffer) => out.push(c));
      const block = Buffer.alloc(1 << 20);
      for (let left = n; left > 0; left -= block.length) {
        if (!z.write(block.subarray(0, Math.min(left, block.length)))) await once(z, 'drain');
      }
      z.end();
      await once(z, 'end');
      return Buffer.concat(out);
    })();
    zeroStreams.set(n, p);
  }
  return p;
}

/** A small valid PNG carrying `text` as its `parameters` tEXt chunk. */
export function pngWithParameters(text: string): Buffer {
  const base = makePng(8, 8, () => [10, 20, 30, 255]);
  const body = base.subarray(8 + 25, base.length - 12); // the chunks between IHDR and IEND
  return Buffer.concat([
    base.subarray(0, 8 + 25),
    pngChunk('tEXt', Buffer.concat([Buffer.from('parameters\0', 'latin1'), Buffer.from(text, 'latin1')])),
    body,
    base.subarray(base.length - 12),
  ]);
}

/** H1: infotext whose last line is `spaces` spaces and a word: A1111's regex backtracked cubically on it. */
export function infotextBacktrackPng(spaces = 2000): Buffer {
  return pngWithParameters(`a prompt\n${' '.repeat(spaces)}x`);
}

/** H3: a valid PNG with a zTXt chunk of `inflatedBytes` zeros (255 KB of zlib for 256 MiB). */
export async function zTxtBombPng(inflatedBytes = 256 * 1024 * 1024): Promise<Buffer> {
  const base = makePng(8, 8, () => [10, 20, 30, 255]);
  const z = await deflatedZeros(inflatedBytes);
  const ztxt = pngChunk('zTXt', Buffer.concat([Buffer.from('parameters\0\0', 'latin1'), z]));
  return Buffer.concat([base.subarray(0, 8 + 25), ztxt, base.subarray(8 + 25)]);
}

/**
 * H4: a first IHDR of 64×64 (passes the pixel check) and a second of `side`×`side` whose image data (zeros)
 * inflates to what the second declares: 8192² RGBA is 268 MB from a 260 KB file.
 */
export async function secondIhdrPng(side = 8192): Promise<Buffer> {
  const z = await deflatedZeros(side * (side * 4 + 1));
  return pngOf(ihdr(64, 64), ihdr(side, side), ...idats(z));
}

/** L3: a valid 4096×4096 16-bit RGBA PNG of zeros: 128 MB inflated from ~130 KB, under the large-body threshold. */
export async function deep16BitPng(side = 4096): Promise<Buffer> {
  const z = await deflatedZeros(side * (side * 8 + 1));
  return pngOf(ihdr(side, side, 16, 6), ...idats(z));
}

/** L2: a `side`×`side` RGB init image and a small greyscale mask the service resizes up to it. */
export async function maskResizeBodies(side = 4096): Promise<{ init: Buffer; mask: Buffer }> {
  const init = pngOf(ihdr(side, side, 8, 2), ...idats(await deflatedZeros(side * (side * 3 + 1))));
  const mask = makePng(64, 64, (x, y) => ((x - 32) ** 2 + (y - 32) ** 2 < 256 ? [255, 255, 255, 255] : [0, 0, 0, 255]));
  return { init, mask };
}

/** A big-endian TIFF (EXIF) whose Exif IFD holds one UserComment of `comment` bytes. */
export function exifWithUserComment(comment: Buffer): Buffer {
  const t = Buffer.alloc(44);
  t.write('MM', 0, 'latin1');
  t.writeUInt16BE(42, 2);
  t.writeUInt32BE(8, 4);
  t.writeUInt16BE(1, 8); // IFD0: one entry, the Exif IFD pointer
  t.writeUInt16BE(0x8769, 10);
  t.writeUInt16BE(4, 12);
  t.writeUInt32BE(1, 14);
  t.writeUInt32BE(26, 18);
  t.writeUInt32BE(0, 22);
  t.writeUInt16BE(1, 26); // Exif IFD: UserComment, UNDEFINED
  t.writeUInt16BE(0x9286, 28);
  t.writeUInt16BE(7, 30);
  t.writeUInt32BE(comment.length, 32);
  t.writeUInt32BE(44, 36);
  t.writeUInt32BE(0, 40);
  return Buffer.concat([t, comment]);
}

/** A JPEG carrying `exif` in an APP1 segment right after SOI (at most 64 KB: a segment's limit). */
export async function jpegWithExif(exif: Buffer): Promise<Buffer> {
  const jpeg = await sharp(makePng(8, 8, () => [200, 100, 50, 255]))
    .jpeg()
    .toBuffer();
  const payload = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exif]);
  const head = Buffer.from([0xff, 0xe1, 0, 0]);
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), head, payload, jpeg.subarray(2)]);
}

/** A WebP (VP8X with the EXIF flag) carrying `exif` in its EXIF chunk, of any size. */
export async function webpWithExif(exif: Buffer): Promise<Buffer> {
  const plain = await sharp(makePng(8, 8, () => [200, 100, 50, 255]))
    .webp({ lossless: true })
    .toBuffer();
  const image = plain.subarray(12); // the VP8L chunk of a simple WebP
  const riffChunk = (type: string, data: Buffer): Buffer => {
    const h = Buffer.alloc(8);
    h.write(type, 0, 'latin1');
    h.writeUInt32LE(data.length, 4);
    return Buffer.concat([h, data, data.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0)]);
  };
  const vp8x = Buffer.alloc(10);
  vp8x[0] = 0x08; // EXIF present
  vp8x.writeUIntLE(7, 4, 3); // canvas 8×8, stored minus one
  vp8x.writeUIntLE(7, 7, 3);
  const body = Buffer.concat([Buffer.from('WEBP', 'latin1'), riffChunk('VP8X', vp8x), image, riffChunk('EXIF', exif)]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

/** H2: a WebP whose EXIF ASCII comment is `nuls` NULs then one character: `/\0+$/` was quadratic on it. */
export function exifNulWebp(nuls = 100_000): Promise<Buffer> {
  return webpWithExif(exifWithUserComment(Buffer.concat([Buffer.from('ASCII\0\0\0', 'latin1'), Buffer.alloc(nuls), Buffer.from('x')])));
}

/** L5: a JPEG whose EXIF UNICODE comment has an odd number of bytes (swap16 threw: a 500). */
export function oddUnicodeJpeg(): Promise<Buffer> {
  const text = Buffer.from('Steps: 20, Sampler: Euler', 'utf16le').swap16();
  return jpegWithExif(exifWithUserComment(Buffer.concat([Buffer.from('UNICODE\0', 'latin1'), text, Buffer.from([0x41])])));
}

/** H5: a JSON body of `bytes` bytes, almost all of it one array of zeros (`styles`, any route's field). */
export function wideJsonBody(bytes: number, base: Record<string, unknown> = { prompt: 'p' }): string {
  const head = `${JSON.stringify(base).slice(0, -1)},"styles":[`;
  const n = Math.max(1, Math.floor((bytes - head.length - 2) / 2));
  return `${head}${'0,'.repeat(n - 1)}0]}`;
}

/** L4: multipart bodies busboy cannot read (content type and body). */
export function malformedMultiparts(): Array<{ name: string; contentType: string; body: Buffer }> {
  const b = 'XyZboundary';
  return [
    { name: 'no boundary', contentType: 'multipart/form-data', body: Buffer.from('--x\r\n\r\n') },
    {
      name: 'ends mid-part',
      contentType: `multipart/form-data; boundary=${b}`,
      body: Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\na cat`),
    },
  ];
}

/** M2: a multipart video body of `fields` text fields of `fieldBytes` each (no file: nothing bounds it but the total). */
export function bulkyMultipart(fields: number, fieldBytes: number): { contentType: string; body: Buffer } {
  const b = 'BulkyBoundary';
  const parts = [`--${b}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\na cat\r\n`];
  for (let i = 0; i < fields; i++) parts.push(`--${b}\r\nContent-Disposition: form-data; name="junk${i}"\r\n\r\n${'j'.repeat(fieldBytes)}\r\n`);
  parts.push(`--${b}--\r\n`);
  return { contentType: `multipart/form-data; boundary=${b}`, body: Buffer.from(parts.join('')) };
}

/** A prompt with an extra-network tag and a long run of spaces before a word: `/\s+,/g` in the tag clean-up was quadratic. */
export function spacedLoraPrompt(spaces = 16_000): string {
  return `<hypernet:x:1> a${' '.repeat(spaces)}b`;
}
