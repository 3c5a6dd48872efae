import { describe, expect, it } from 'vitest';
import { pngOneColour as blankImage } from '../../src/images/png-colour.ts';
import { buildInfo } from '../../src/api/a1111/response.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { ctx, makePng, makePngWith } from '../golden/helpers.ts';

describe('a uniform black (NaN) output is flagged', () => {
  it('black, uniform and real images are told apart', async () => {
    expect(await blankImage(makePng(32, 32, [0, 0, 0, 255]))).toBe('black');
    expect(await blankImage(makePng(32, 32, [40, 40, 40, 255]))).toBe('uniform');
    expect(await blankImage(makePngWith(32, 32, (x) => [x * 8, 0, 0, 255]))).toBeUndefined();
  });

  it('is decided by the whole image, not by its top rows alone', async () => {
    // One colour in the rows read first, another below them: not blank.
    expect(await blankImage(makePngWith(32, 32, (_x, y) => (y < 20 ? [0, 0, 0, 255] : [0, 0, 1, 255])))).toBeUndefined();
    // Only the last pixel differs.
    expect(await blankImage(makePngWith(32, 32, (x, y) => (x === 31 && y === 31 ? [1, 0, 0, 255] : [0, 0, 0, 255])))).toBeUndefined();
    // Alpha is not colour: a black image with varying alpha, in the top rows and below, is black.
    expect(await blankImage(makePngWith(32, 32, (x, y) => [0, 0, 0, (x * 8 + y) % 256]))).toBe('black');
    // Tall and thin, and shorter than the rows read first.
    expect(await blankImage(makePng(1, 64, [9, 9, 9, 255]))).toBe('uniform');
    expect(await blankImage(makePng(64, 3, [0, 0, 0, 255]))).toBe('black');
  });

  it('info.warnings names the image', () => {
    const { request } = normalizeRequest('txt2img', { prompt: 'x', width: 64, height: 64, batch_size: 2 }, ctx());
    const outputs = [
      { sha256: 'a', size: 1, mime: 'image/png' },
      { sha256: 'b', size: 1, mime: 'image/png', blank: 'black' as const },
    ];
    const info = JSON.parse(buildInfo(request, { outputs }, { renderId: 'render-x' }));
    expect(info.warnings).toEqual([expect.stringMatching(/^image 1 is uniformly black: the VAE most likely produced NaNs/)]);
  });
});
