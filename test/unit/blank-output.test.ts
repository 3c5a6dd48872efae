import { describe, expect, it } from 'vitest';
import { blankImage } from '../../src/activities/store-outputs.ts';
import { buildInfo } from '../../src/api/a1111/response.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { ctx, makePng, makePngWith } from '../golden/helpers.ts';

describe('a uniform black (NaN) output is flagged', () => {
  it('black, uniform and real images are told apart', async () => {
    expect(await blankImage(makePng(32, 32, [0, 0, 0, 255]))).toBe('black');
    expect(await blankImage(makePng(32, 32, [40, 40, 40, 255]))).toBe('uniform');
    expect(await blankImage(makePngWith(32, 32, (x) => [x * 8, 0, 0, 255]))).toBeUndefined();
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
