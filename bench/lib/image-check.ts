/**
 * Output checks of the engine benchmark, the SGLang project's own rule for a new engine path: the image is
 * not noise, and it is close to the reference engine's image for the same seed. Different kernels never give
 * identical pixels, so closeness is structural: the correlation of small grey thumbnails.
 */
import { PNG } from 'pngjs';

export interface Grey {
  width: number;
  height: number;
  /** Luma 0..255, row-major. */
  data: Float64Array;
}

export function greyFromPng(png: Buffer): Grey {
  const img = PNG.sync.read(png);
  const data = new Float64Array(img.width * img.height);
  for (let i = 0; i < data.length; i++) {
    const o = i * 4;
    data[i] = 0.299 * img.data[o]! + 0.587 * img.data[o + 1]! + 0.114 * img.data[o + 2]!;
  }
  return { width: img.width, height: img.height, data };
}

/**
 * How much the image looks like noise: the mean difference of horizontal neighbours over the mean difference
 * of far-apart pixel pairs. Natural images are locally smooth (well below 0.5); white noise is about 1.
 * A flat image (no contrast at all) counts as a failure too: it returns 1.
 */
export function noiseScore(g: Grey): number {
  const { width, height, data } = g;
  let near = 0;
  let nearN = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 1; x < width; x++) {
      near += Math.abs(data[y * width + x]! - data[y * width + x - 1]!);
      nearN++;
    }
  }
  let far = 0;
  const n = data.length;
  // A fixed stride through the image: deterministic "random" pairs.
  for (let i = 0; i < n; i++) far += Math.abs(data[i]! - data[(i * 7919 + 104_729) % n]!);
  const farMean = far / n;
  if (farMean < 1e-6 || nearN === 0) return 1;
  return near / nearN / farMean;
}

/** Box-averaged `size`×`size` thumbnail. */
export function thumbnail(g: Grey, size = 32): Float64Array {
  const out = new Float64Array(size * size);
  const count = new Float64Array(size * size);
  for (let y = 0; y < g.height; y++) {
    const ty = Math.min(size - 1, Math.floor((y * size) / g.height));
    for (let x = 0; x < g.width; x++) {
      const t = ty * size + Math.min(size - 1, Math.floor((x * size) / g.width));
      out[t]! += g.data[y * g.width + x]!;
      count[t]! += 1;
    }
  }
  for (let i = 0; i < out.length; i++) out[i] = count[i]! > 0 ? out[i]! / count[i]! : 0;
  return out;
}

/** Pearson correlation of the two images' thumbnails (1 = same structure; about 0 = unrelated). */
export function similarity(a: Grey, b: Grey, size = 32): number {
  const ta = thumbnail(a, size);
  const tb = thumbnail(b, size);
  const mean = (t: Float64Array) => t.reduce((s, v) => s + v, 0) / t.length;
  const ma = mean(ta);
  const mb = mean(tb);
  let cov = 0;
  let va = 0;
  let vb = 0;
  for (let i = 0; i < ta.length; i++) {
    const da = ta[i]! - ma;
    const db = tb[i]! - mb;
    cov += da * db;
    va += da * da;
    vb += db * db;
  }
  return va === 0 || vb === 0 ? 0 : cov / Math.sqrt(va * vb);
}

/** Thresholds the benchmark reports PASS/CHECK against (not asserted: a human looks at CHECK cases). */
export const NOT_NOISE_MAX = 0.5;
export const CLOSE_MIN = 0.8;
