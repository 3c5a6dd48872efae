/**
 * Input PNGs are checked as a decoder would fail on them (png-bounds.ts assertPngIntact), without decoding
 * their pixels: every defect pngjs's full decode refused is still refused with a 400 naming it, and a good
 * image costs one bounded inflate and no RGBA copy (the memory budget: 100 concurrent 2 MB img2img).
 */
import { randomFillSync } from 'node:crypto';
import zlib from 'node:zlib';
import { PNG } from 'pngjs';
import { describe, expect, it, vi } from 'vitest';
import { decodeImageInput } from '../../src/images/decode.ts';
import { assertPngIntact, PngBoundsError } from '../../src/images/png-bounds.ts';
import { LIMITS, thrown } from '../golden/helpers.ts';

/** A PNG assembled from IHDR fields and raw (filtered) scanlines, with correct CRCs unless told. */
function png(opts: {
  width: number;
  height: number;
  bitDepth?: number;
  colorType?: number;
  interlace?: number;
  raw?: Buffer;
  plte?: boolean;
  end?: boolean;
}): Buffer {
  const { width, height, bitDepth = 8, colorType = 2, interlace = 0 } = opts;
  const chunk = (type: string, data: Buffer): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(Buffer.concat([head.subarray(4), data])) >>> 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = bitDepth;
  ihdr[9] = colorType;
  ihdr[12] = interlace;
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType] ?? 3;
  const raw = opts.raw ?? Buffer.alloc(height * (Math.ceil((width * channels * bitDepth) / 8) + 1));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    ...(opts.plte ? [chunk('PLTE', Buffer.alloc(3))] : []),
    chunk('IDAT', zlib.deflateSync(raw)),
    ...(opts.end === false ? [] : [chunk('IEND', Buffer.alloc(0))]),
  ]);
}

const refusal = (bytes: Buffer): string => {
  const err = thrown(() => decodeImageInput(bytes.toString('base64'), 'init_images.0', LIMITS));
  expect(err.status).toBe(400);
  expect(err.field).toBe('init_images.0');
  return err.message;
};

describe('assertPngIntact: a PNG checked without decoding its pixels', () => {
  it('accepts what pngjs decodes: RGB, RGBA, grey, palette, 16-bit, interlaced', () => {
    for (const p of [
      png({ width: 7, height: 5 }),
      png({ width: 7, height: 5, colorType: 6 }),
      png({ width: 9, height: 3, colorType: 0, bitDepth: 1 }),
      png({ width: 4, height: 4, colorType: 3, bitDepth: 4, plte: true }),
      png({ width: 3, height: 2, bitDepth: 16 }),
    ]) {
      expect(PNG.sync.read(p).width).toBeGreaterThan(0);
      expect(() => assertPngIntact(p)).not.toThrow();
    }
    const img = new PNG({ width: 13, height: 7 });
    img.data.fill(90);
    const interlaced = PNG.sync.write(img, { interlace: true } as never);
    expect(assertPngIntact(interlaced)).toMatchObject({ width: 13, height: 7 });
  });

  it('refuses each defect with a 400 that says what is wrong', () => {
    const good = png({ width: 6, height: 4 });
    const badCrc = Buffer.from(good);
    badCrc[good.length - 20]! ^= 0x55; // inside the IDAT data: its CRC no longer matches
    expect(refusal(badCrc)).toMatch(/corrupt image\/png image \(CRC mismatch in chunk "IDAT"\)/);

    const badFilter = Buffer.alloc(4 * (6 * 3 + 1));
    badFilter[2 * (6 * 3 + 1)] = 9; // the third scanline's filter type
    expect(refusal(png({ width: 6, height: 4, raw: badFilter }))).toMatch(/unknown filter type 9/);

    expect(refusal(png({ width: 6, height: 4, raw: Buffer.alloc(2 * (6 * 3 + 1)) }))).toMatch(/image data ends after 38 of the 76 bytes/);
    expect(refusal(png({ width: 6, height: 4, raw: Buffer.alloc(6 * (6 * 3 + 1)) }))).toMatch(/inflates to more than the 76 bytes/);
    expect(refusal(png({ width: 4, height: 4, colorType: 3, bitDepth: 8 }))).toMatch(/palette image without a PLTE chunk/);
    expect(refusal(png({ width: 4, height: 4, colorType: 2, bitDepth: 4 }))).toMatch(/bit depth 4 is not valid for colour type 2/);
    expect(refusal(png({ width: 4, height: 4, interlace: 2 }))).toMatch(/interlace method/);
    expect(refusal(png({ width: 4, height: 4, end: false }))).toMatch(/no IEND chunk/);
    expect(refusal(good.subarray(0, good.length - 30))).toMatch(/truncated/);
    for (const bad of [badCrc, png({ width: 6, height: 4, raw: badFilter }), png({ width: 4, height: 4, end: false })]) {
      expect(() => PNG.sync.read(bad), 'pngjs refuses it too').toThrow();
    }
  });

  it('a good 2 MB PNG is inflated once, bounded, and never decoded to RGBA', () => {
    const width = 820;
    const height = 820;
    const raw = Buffer.alloc(height * (width * 3 + 1));
    randomFillSync(raw); // incompressible: the PNG is as large as its pixels
    for (let y = 0; y < height; y++) raw[y * (width * 3 + 1)] = y % 5;
    const big = png({ width, height, raw });
    expect(big.length).toBeGreaterThan(1_500_000);
    const inflate = vi.spyOn(zlib, 'inflateSync');
    const read = vi.spyOn(PNG.sync, 'read');
    try {
      expect(decodeImageInput(big.toString('base64'), 'init_images.0', { ...LIMITS, maxImageBytes: 8 << 20 }).ref).toMatchObject({
        width,
        height,
        mime: 'image/png',
      });
      expect(inflate).toHaveBeenCalledTimes(1);
      expect(read).not.toHaveBeenCalled();
    } finally {
      inflate.mockRestore();
      read.mockRestore();
    }
  });

  it('names PngBoundsError for callers that check the type', () => {
    expect(() => assertPngIntact(png({ width: 4, height: 4, end: false }))).toThrow(PngBoundsError);
  });
});
