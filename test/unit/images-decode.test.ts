import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { PNG } from 'pngjs';
import { decodeImageInput, sniffImageMime } from '../../src/images/decode.ts';
import { normalizeMask } from '../../src/images/mask.ts';
import { JPEG_1X1, LIMITS, makePng, makePngWith, makeWebp, thrown } from '../golden/helpers.ts';

describe('decodeImageInput', () => {
  it('raw base64 PNG → blob ref with sha256, mime and size', () => {
    const bytes = makePng(40, 30);
    const d = decodeImageInput(bytes.toString('base64'), 'init_images.0', LIMITS);
    expect(d.bytes.equals(bytes)).toBe(true);
    expect(d.ref).toEqual({
      sha256: createHash('sha256').update(bytes).digest('hex'),
      size: bytes.length,
      mime: 'image/png',
      width: 40,
      height: 30,
    });
  });

  it('data URLs, with the mime detected from bytes (not the claim)', () => {
    const bytes = makePng(8, 8);
    const d = decodeImageInput(`data:image/jpeg;base64,${bytes.toString('base64')}`, 'mask', LIMITS);
    expect(d.ref.mime).toBe('image/png');
  });

  it('JPEG and WebP', () => {
    expect(decodeImageInput(JPEG_1X1.toString('base64'), 'f', LIMITS).ref).toMatchObject({ mime: 'image/jpeg', width: 1, height: 1 });
    expect(decodeImageInput(makeWebp(300, 200).toString('base64'), 'f', LIMITS).ref).toMatchObject({ mime: 'image/webp', width: 300, height: 200 });
  });

  it('tolerates whitespace/newlines, missing padding and the URL-safe alphabet', () => {
    const b64 = makePng(8, 8).toString('base64');
    const wrapped = b64.replace(/(.{60})/g, '$1\n');
    expect(decodeImageInput(wrapped, 'f', LIMITS).ref.width).toBe(8);
    const unpadded = b64
      .replace(/={1,2}$/, '')
      .replace(/\+/g, '-')
      .replace(/\//g, '_');
    expect(decodeImageInput(unpadded, 'f', LIMITS).ref.width).toBe(8);
  });

  it.each([
    ['http://example.com/x.png', 400, /URL fetching is disabled/],
    ['https://example.com/x.png', 400, /URL fetching is disabled/],
    ['', 400, /empty/],
    ['!!!not base64!!!', 400, /not valid base64/],
    [Buffer.from('hello world, not an image').toString('base64'), 400, /not a PNG, JPEG or WebP/],
    ['data:text/plain;base64,aGVsbG8=', 400, /data:image/],
    ['data:image/png,rawdata', 400, /data:image/],
    [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0]).toString('base64'), 400, /corrupt/],
  ])('rejects %#', (value, status, re) => {
    const e = thrown(() => decodeImageInput(value, 'extra_images.1', LIMITS));
    expect(e.status).toBe(status);
    expect(e.field).toBe('extra_images.1');
    expect(e.message).toMatch(/^extra_images\.1: /);
    expect(e.message).toMatch(re);
  });

  it('413 over the byte limit (checked before decoding) and over the pixel limit', () => {
    const big = makePng(200, 200).toString('base64');
    const e1 = thrown(() => decodeImageInput(big, 'init_images.0', { ...LIMITS, maxImageBytes: 100 }));
    expect(e1).toMatchObject({ status: 413, field: 'init_images.0' });
    const e2 = thrown(() => decodeImageInput(big, 'init_images.0', { ...LIMITS, maxImagePixels: 100 * 100 }));
    expect(e2).toMatchObject({ status: 413, field: 'init_images.0' });
    expect(e2.message).toMatch(/200x200/);
  });

  it('sniffImageMime', () => {
    expect(sniffImageMime(makePng(1, 1))).toBe('image/png');
    expect(sniffImageMime(JPEG_1X1)).toBe('image/jpeg');
    expect(sniffImageMime(makeWebp(1, 1))).toBe('image/webp');
    expect(sniffImageMime(Buffer.from('GIF89a......'))).toBeUndefined();
  });
});

function maskPixels(bytes: Buffer): number[] {
  const png = PNG.sync.read(bytes);
  const out: number[] = [];
  for (let i = 0; i < png.width * png.height; i++) out.push(png.data[i * 4]!);
  return out;
}

describe('normalizeMask (white = repaint, A1111 semantics)', () => {
  const decode = (b: Buffer) => decodeImageInput(b.toString('base64'), 'mask', LIMITS);

  it('an opaque RGB mask becomes greyscale luminance', () => {
    const src = makePngWith(2, 1, (x) => (x === 0 ? [255, 255, 255, 255] : [0, 0, 0, 255]));
    const m = normalizeMask(decode(src), 'mask', { invert: false, round: true }, LIMITS);
    expect(m.ref.mime).toBe('image/png');
    expect(PNG.sync.read(m.bytes).width).toBe(2);
    expect(maskPixels(m.bytes)).toEqual([255, 0]);
    // Greyscale PNG: colour type 0 in IHDR.
    expect(m.bytes[25]).toBe(0);
  });

  it('inpainting_mask_invert flips it', () => {
    const src = makePngWith(2, 1, (x) => (x === 0 ? [255, 255, 255, 255] : [0, 0, 0, 255]));
    const m = normalizeMask(decode(src), 'mask', { invert: true, round: true }, LIMITS);
    expect(maskPixels(m.bytes)).toEqual([0, 255]);
  });

  it('a mask with transparency uses its alpha (opaque = repaint), rounded at 128', () => {
    const src = makePngWith(3, 1, (x) => [0, 0, 0, [255, 200, 0][x]!] as [number, number, number, number]);
    expect(maskPixels(normalizeMask(decode(src), 'mask', { invert: false, round: true }, LIMITS).bytes)).toEqual([255, 255, 0]);
    expect(maskPixels(normalizeMask(decode(src), 'mask', { invert: false, round: false }, LIMITS).bytes)).toEqual([255, 200, 0]);
  });

  it('is deterministic (same bytes → same sha256)', () => {
    const src = decode(makePng(16, 16, [255, 255, 255, 255]));
    const a = normalizeMask(src, 'mask', { invert: false, round: true }, LIMITS);
    const b = normalizeMask(src, 'mask', { invert: false, round: true }, LIMITS);
    expect(a.ref.sha256).toBe(b.ref.sha256);
  });

  it('JPEG masks pass through; inverting them is refused', () => {
    const j = decodeImageInput(JPEG_1X1.toString('base64'), 'mask', LIMITS);
    expect(normalizeMask(j, 'mask', { invert: false, round: true }, LIMITS)).toBe(j);
    expect(thrown(() => normalizeMask(j, 'mask', { invert: true, round: true }, LIMITS))).toMatchObject({
      status: 400,
      field: 'inpainting_mask_invert',
    });
  });
});

describe('truncated images are refused before anything is stored (found by the fuzzer)', () => {
  it.each([
    ['PNG cut inside IHDR', Buffer.from('iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ', 'base64')],
    ['PNG cut inside IDAT', makePng(16, 16).subarray(0, 60)],
    ['JPEG without its end marker', JPEG_1X1.subarray(0, JPEG_1X1.length - 40)],
    ['WebP shorter than its RIFF size', makeWebp(8, 8).subarray(0, 24)],
  ])('%s', (_name, bytes) => {
    const err = thrown(() => decodeImageInput(bytes.toString('base64'), 'extra_images.0', LIMITS));
    expect(err).toMatchObject({ status: 400, field: 'extra_images.0' });
  });
});
