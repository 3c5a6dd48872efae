import zlib from 'node:zlib';
import { PNG } from 'pngjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeImageInput } from '../../src/images/decode.ts';
import { normalizeMask } from '../../src/images/mask.ts';
import { declaredInflatedBytes, readPngBounded } from '../../src/images/png-bounds.ts';
import { LIMITS, makePngWith, thrown } from '../golden/helpers.ts';
import { pngBomb } from '../support/png-bomb.ts';

const INFLATED = 32 * 1024 * 1024;

/** Bytes handed out by zlib.inflateSync (pngjs's interlaced path and ours) while `f` runs: the work done. */
function inflatedDuring(f: () => unknown): number {
  let total = 0;
  const real = zlib.inflateSync;
  const spy = vi.spyOn(zlib, 'inflateSync').mockImplementation((buf: zlib.InputType, opts?: zlib.ZlibOptions) => {
    const out = real(buf, opts);
    total += out.length;
    return out;
  });
  try {
    f();
  } catch {
    // the caller checks the error separately
  } finally {
    spy.mockRestore();
  }
  return total;
}

afterEach(() => vi.restoreAllMocks());

describe('PNG inflate bombs (red-team: 1×1 interlaced PNG inflating to 1 GiB)', () => {
  it('declared sizes: scanlines plus filter bytes, per Adam7 pass when interlaced', () => {
    expect(declaredInflatedBytes({ width: 1, height: 1, bitDepth: 8, colorType: 6, interlaced: false })).toBe(5);
    expect(declaredInflatedBytes({ width: 1, height: 1, bitDepth: 8, colorType: 6, interlaced: true })).toBe(5);
    expect(declaredInflatedBytes({ width: 3, height: 2, bitDepth: 8, colorType: 2, interlaced: false })).toBe(2 * (9 + 1));
    // 8×8 RGBA interlaced: passes of 1×1, 1×1, 2×1, 2×2, 4×2, 4×4, 8×4 pixels.
    const rows = (w: number, h: number) => h * (w * 4 + 1);
    expect(declaredInflatedBytes({ width: 8, height: 8, bitDepth: 8, colorType: 6, interlaced: true })).toBe(
      rows(1, 1) + rows(1, 1) + rows(2, 1) + rows(2, 2) + rows(4, 2) + rows(4, 4) + rows(8, 4),
    );
  });

  it('real PNGs, interlaced ones included, still decode', () => {
    const png = new PNG({ width: 13, height: 7 });
    png.data.fill(200);
    const plain = PNG.sync.write(png);
    expect(readPngBounded(plain).width).toBe(13);
    const interlaced = PNG.sync.write(png, { interlace: true } as never);
    expect(decodeImageInput(interlaced.toString('base64'), 'f', LIMITS).ref).toMatchObject({ width: 13, height: 7 });
    expect(decodeImageInput(makePngWith(40, 30, () => [1, 2, 3, 255]).toString('base64'), 'f', LIMITS).ref.width).toBe(40);
  });

  for (const interlaced of [true, false]) {
    it(`an ${interlaced ? 'interlaced' : 'ordinary'} bomb is refused with a 400 before it is inflated`, () => {
      const bomb = pngBomb({ inflatedBytes: INFLATED, interlaced });
      expect(bomb.length).toBeLessThan(LIMITS.maxImageBytes);
      const b64 = bomb.toString('base64');
      const err = thrown(() => decodeImageInput(b64, 'init_images.0', LIMITS));
      expect(err.status).toBe(400);
      expect(err.field).toBe('init_images.0');
      expect(err.message).toMatch(/inflates to more than/);
      // Work, not time: at most the declared few bytes were inflated, never the 32 MiB behind them.
      expect(inflatedDuring(() => decodeImageInput(b64, 'init_images.0', LIMITS))).toBeLessThan(1024 * 1024);
    });
  }

  it('the mask path, which decodes its PNG again, is bounded too', () => {
    const bomb = pngBomb({ inflatedBytes: INFLATED, interlaced: true });
    const fake = { ref: { sha256: 'x', size: bomb.length, mime: 'image/png' as const, width: 1, height: 1 }, bytes: bomb };
    const err = thrown(() => normalizeMask(fake, 'mask', { invert: false, round: true }, LIMITS));
    expect(err.status).toBe(400);
    expect(err.field).toBe('mask');
    expect(inflatedDuring(() => normalizeMask(fake, 'mask', { invert: false, round: true }, LIMITS))).toBeLessThan(1024 * 1024);
  });
});
