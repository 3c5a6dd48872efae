/**
 * JPEG and WebP containers for the fuzzer, built around small real images (made with sharp at start): EXIF
 * segments and chunks inserted, lengths and sizes lied about, frames claiming huge dimensions, truncations.
 */
import fc from 'fast-check';
import sharp from 'sharp';
import { exifArb } from './exif.ts';

export interface BaseImages {
  jpeg: Buffer;
  webp: Buffer;
}

export async function makeBaseImages(): Promise<BaseImages> {
  const raw = { create: { width: 16, height: 16, channels: 3 as const, background: { r: 200, g: 40, b: 40 } } };
  return { jpeg: await sharp(raw).jpeg().toBuffer(), webp: await sharp(raw).webp().toBuffer() };
}

function jpegSegment(marker: number, payload: Buffer, lieLength?: number): Buffer {
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE((lieLength ?? payload.length + 2) & 0xffff, 2);
  return Buffer.concat([head, payload]);
}

/** Where the SOF0/SOF2 frame's height and width sit in a JPEG, if any. */
function sofOffset(jpeg: Buffer): number | undefined {
  for (let i = 2; i + 9 < jpeg.length;) {
    if (jpeg[i] !== 0xff) return undefined;
    const marker = jpeg[i + 1]!;
    if (marker === 0xc0 || marker === 0xc2) return i + 5;
    i += 2 + jpeg.readUInt16BE(i + 2);
  }
  return undefined;
}

export function jpegArb(base: Buffer): fc.Arbitrary<Buffer> {
  return fc
    .record({
      exifs: fc.array(exifArb, { maxLength: 2 }),
      lie: fc.option(fc.integer({ min: 0, max: 0xffff }), { freq: 8 }),
      dims: fc.option(fc.tuple(fc.constantFrom(0, 1, 8192, 65_535), fc.constantFrom(0, 1, 8192, 65_535)), { freq: 6 }),
      truncateTo: fc.option(fc.nat(), { freq: 8 }),
      garbageAfterSoi: fc.option(fc.uint8Array({ maxLength: 32 }), { freq: 10 }),
    })
    .map((r) => {
      const body = Buffer.from(base.subarray(2));
      const sof = sofOffset(base);
      if (r.dims && sof !== undefined) {
        body.writeUInt16BE(r.dims[0], sof - 2);
        body.writeUInt16BE(r.dims[1], sof);
      }
      const app1s = r.exifs.map((e, i) =>
        jpegSegment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), e]), i === 0 && r.lie !== null ? r.lie : undefined),
      );
      const out = Buffer.concat([Buffer.from([0xff, 0xd8]), ...(r.garbageAfterSoi ? [Buffer.from(r.garbageAfterSoi)] : []), ...app1s, body]);
      return r.truncateTo !== null ? out.subarray(0, r.truncateTo % (out.length + 1)) : out;
    });
}

function riffChunk(fourcc: string, data: Buffer, lieSize?: number): Buffer {
  const head = Buffer.alloc(8);
  head.write(fourcc, 0, 'latin1');
  head.writeUInt32LE((lieSize ?? data.length) >>> 0, 4);
  return Buffer.concat([head, data, data.length % 2 ? Buffer.from([0]) : Buffer.alloc(0)]);
}

/** A VP8X-extended WebP around sharp's VP8 chunk, with EXIF/XMP chunks and lying sizes. */
export function webpArb(base: Buffer): fc.Arbitrary<Buffer> {
  const vp8 = base.subarray(12); // the simple file's single VP8 chunk, header included
  return fc
    .record({
      exif: fc.option(exifArb, { freq: 1 }),
      exifPrefix: fc.boolean(),
      canvas: fc.tuple(fc.constantFrom(16, 1, 16_384, 0xffffff + 1), fc.constantFrom(16, 1, 16_384, 0xffffff + 1)),
      lieRiff: fc.option(fc.constantFrom(0, 4, 0xffffffff), { freq: 8 }),
      lieExif: fc.option(fc.constantFrom(0, 1, 0x7fffffff, 0xffffffff), { freq: 8 }),
      truncateTo: fc.option(fc.nat(), { freq: 8 }),
    })
    .map((r) => {
      const x = Buffer.alloc(10);
      x[0] = r.exif ? 0x08 : 0;
      x.writeUIntLE((r.canvas[0] - 1) & 0xffffff, 4, 3);
      x.writeUIntLE((r.canvas[1] - 1) & 0xffffff, 7, 3);
      const chunks = [riffChunk('VP8X', x), vp8];
      if (r.exif)
        chunks.push(riffChunk('EXIF', Buffer.concat([r.exifPrefix ? Buffer.from('Exif\0\0', 'latin1') : Buffer.alloc(0), r.exif]), r.lieExif ?? undefined));
      const payload = Buffer.concat([Buffer.from('WEBP', 'latin1'), ...chunks]);
      const head = Buffer.alloc(8);
      head.write('RIFF', 0, 'latin1');
      head.writeUInt32LE((r.lieRiff ?? payload.length) >>> 0, 4);
      const out = Buffer.concat([head, payload]);
      return r.truncateTo !== null ? out.subarray(0, r.truncateTo % (out.length + 1)) : out;
    });
}

/** `base` with one APP1 EXIF segment right after SOI. */
export function jpegWithExif(base: Buffer, exif: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8]), jpegSegment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), exif])), base.subarray(2)]);
}

/** `base` (a simple VP8 WebP) as an extended file with an EXIF chunk. */
export function webpWithExif(base: Buffer, exif: Buffer): Buffer {
  const x = Buffer.alloc(10);
  x[0] = 0x08;
  x.writeUIntLE(15, 4, 3);
  x.writeUIntLE(15, 7, 3);
  const payload = Buffer.concat([Buffer.from('WEBP', 'latin1'), riffChunk('VP8X', x), base.subarray(12), riffChunk('EXIF', exif)]);
  const head = Buffer.alloc(8);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(payload.length, 4);
  return Buffer.concat([head, payload]);
}
