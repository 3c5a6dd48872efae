/** The engine benchmark's output checks (bench/lib/image-check.ts): noise is told from an image, and structure from chance. */
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { CLOSE_MIN, greyFromPng, noiseScore, NOT_NOISE_MAX, similarity } from '../../bench/lib/image-check.ts';

function png(w: number, h: number, f: (x: number, y: number) => number): Buffer {
  const p = new PNG({ width: w, height: h });
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const v = Math.max(0, Math.min(255, Math.round(f(x, y))));
      p.data.set([v, v, v, 255], (y * w + x) * 4);
    }
  return PNG.sync.write(p);
}

// A deterministic pseudo-random sequence (no Math.random: the test must not vary between runs).
let state = 12345;
const rand = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 255;

const scene = (x: number, y: number) => 128 + 100 * Math.sin(x / 17) * Math.cos(y / 23);

describe('engine benchmark output checks', () => {
  it('white noise scores about 1, a smooth scene far below the threshold, a flat image fails', () => {
    expect(noiseScore(greyFromPng(png(128, 96, () => rand())))).toBeGreaterThan(0.9);
    expect(noiseScore(greyFromPng(png(128, 96, scene)))).toBeLessThan(NOT_NOISE_MAX / 2);
    expect(noiseScore(greyFromPng(png(64, 64, () => 90)))).toBe(1);
  });

  it('the same scene with small differences is close; an unrelated image and noise are not', () => {
    const a = greyFromPng(png(128, 96, scene));
    const b = greyFromPng(png(128, 96, (x, y) => scene(x, y) + (rand() - 128) / 10));
    expect(similarity(a, a)).toBeCloseTo(1, 6);
    expect(similarity(a, b)).toBeGreaterThan(CLOSE_MIN);
    expect(similarity(a, greyFromPng(png(128, 96, (x, y) => 128 + 100 * Math.sin(y / 5 + x / 40))))).toBeLessThan(CLOSE_MIN);
    expect(Math.abs(similarity(a, greyFromPng(png(128, 96, () => rand()))))).toBeLessThan(0.5);
  });
});
