import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { creep, ItemProgress, STAGE_ENDS } from '../../src/activities/item-progress.ts';
import { decodeUnits, StageRates } from '../../src/activities/stage-rates.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';

const node = (class_type: string) => ({ class_type, inputs: {}, _meta: { title: class_type } });
const image: ComfyGraph = {
  unet: node('UNETLoader'),
  positive: node('CLIPTextEncode'),
  sampler: node('KSampler'),
  decode: node('VAEDecode'),
  save: node('SaveImage'),
};
const hires: ComfyGraph = { ...image, hr_decode: node('VAEDecode'), hr_sampler: node('KSampler') };

describe('item progress only rises and names its stage', () => {
  const E = STAGE_ENDS.image;
  it('text encoding, sampling, then decode (its 0/1 bar does not take it back to 0) and save as stages of their own', () => {
    const p = new ItemProgress(image, false);
    const seen: number[] = [];
    const at = (node: string, value: number | undefined, max: number | undefined, t: number) => {
      const r = p.update(node, value, max, t);
      seen.push(r.fraction);
      return r;
    };
    expect(at('unet', 0, 1, 0).phase).toBe('starting');
    expect(at('positive', undefined, undefined, 10)).toMatchObject({ phase: 'encoding', fraction: E.starting });
    const encoding = p.tick(2_000).fraction;
    expect(encoding).toBeGreaterThan(E.starting);
    expect(encoding).toBeLessThan(E.encoding);
    for (let s = 1; s <= 20; s++) expect(at('sampler', s, 20, 2_000 + 100 * s).phase).toBe('sampling');
    expect(seen.at(-1)).toBeCloseTo(E.sampling);
    expect(at('decode', 0, 1, 4100)).toMatchObject({ phase: 'decoding' });
    const later = p.tick(5000);
    expect(later.fraction).toBeGreaterThan(E.sampling);
    expect(later.fraction).toBeLessThan(E.decoding);
    expect(at('save', 0, 1, 5100)).toMatchObject({ phase: 'saving', fraction: E.decoding });
    for (let i = 1; i < seen.length; i++) expect(seen[i]!).toBeGreaterThanOrEqual(seen[i - 1]!);
    // What the silent stages took, for the next render's estimate.
    expect(p.measured(5200)).toEqual({ encodeMs: 2_100 - 10, decodeMs: 1_000 });
  });

  it('hires: the decode between the two samplers is not the final decode', () => {
    const p = new ItemProgress(hires, false);
    p.update('sampler', 10, 10, 1);
    const mid = p.update('hr_decode', 0, 1, 2);
    expect(mid.phase).toBe('sampling');
    const half = E.encoding + (E.sampling - E.encoding) / 2;
    expect(mid.fraction).toBeCloseTo(half);
    expect(p.update('hr_sampler', 5, 10, 3).fraction).toBeCloseTo(half + (E.sampling - E.encoding) / 4);
  });
});

describe('video decode: estimated from its measured rate, rising to the end', () => {
  const V = STAGE_ENDS.video;
  const video: ComfyGraph = {
    text: node('CLIPTextEncode'),
    sampler: node('KSampler'),
    decode: node('VAEDecode'),
    create_video: node('CreateVideo'),
    save: node('SaveVideo'),
  };

  /** The item's fraction every second through a decode that takes `actualMs`, expected to take `expectedMs`. */
  function decodeSeries(expectedMs: number | undefined, actualMs: number, samplingMs = 10_000): number[] {
    const p = new ItemProgress(video, true, expectedMs !== undefined ? { decodeMs: expectedMs } : {});
    p.update('sampler', 1, 10, 0);
    p.update('sampler', 10, 10, samplingMs);
    p.update('decode', undefined, undefined, samplingMs);
    const out: number[] = [];
    for (let t = 1_000; t < actualMs; t += 1_000) out.push(p.tick(samplingMs + t).fraction);
    return out;
  }

  /** Longest run of one integer percent (what /v1/videos shows), in samples. */
  const longestPlateau = (series: number[]): number => {
    let best = 0;
    let run = 0;
    for (let i = 1; i < series.length; i++) {
      run = Math.floor(series[i]! * 100) === Math.floor(series[i - 1]! * 100) ? run + 1 : 0;
      best = Math.max(best, run);
    }
    return best;
  };

  it('a measured decode rate: the decode share fills in about the decode time, and never stands still long', () => {
    const series = decodeSeries(100_000, 100_000);
    expect(series[0]).toBeGreaterThan(V.sampling);
    // At the expected end it is 55 % through the decode's share; it keeps rising after.
    expect(series.at(-1)!).toBeCloseTo(V.sampling + 0.55 * (V.decoding - V.sampling), 2);
    for (let i = 1; i < series.length; i++) expect(series[i]!).toBeGreaterThan(series[i - 1]!);
    // A 100 s decode of a ~110 s render: no percent held for more than a tenth of it.
    expect(longestPlateau(series)).toBeLessThan(11);
  });

  it('a decode twice as long as measured still rises, slower, never reaching the save', () => {
    const series = decodeSeries(50_000, 100_000);
    for (let i = 1; i < series.length; i++) expect(series[i]!).toBeGreaterThan(series[i - 1]!);
    expect(series.at(-1)!).toBeLessThan(V.decoding);
    expect(longestPlateau(series)).toBeLessThan(11);
  });

  it("issue 28's Wan render (143 s sampling, 106 s decode): the decode rises all along, no percent held for a tenth of the 249 s", () => {
    // The first render of a model guesses from the sampling time (and measures); the next ones have the rate.
    const first = decodeSeries(undefined, 106_000, 143_000);
    const measured = decodeSeries(106_000, 106_000, 143_000);
    for (const s of [first, measured]) {
      for (let i = 1; i < s.length; i++) expect(s[i]!).toBeGreaterThan(s[i - 1]!);
      expect(longestPlateau(s)).toBeLessThan(25);
      expect(s.at(-1)! - s[0]!).toBeGreaterThan(0.1);
    }
  });

  it('creep: linear to 55 % at the expected time, then each doubling adds a fifth, never 100 %', () => {
    expect(creep(0, 10)).toBe(0);
    expect(creep(5, 10)).toBeCloseTo(0.275);
    expect(creep(10, 10)).toBeCloseTo(0.55);
    expect(creep(20, 10)).toBeCloseTo(0.55 + 0.28 * Math.LN2);
    expect(creep(40, 10) - creep(20, 10)).toBeCloseTo(0.28 * Math.LN2);
    expect(creep(1e9, 10)).toBe(0.99);
  });

  it('a decode five times longer than measured: still no percent held for a tenth of the render', () => {
    const series = decodeSeries(20_000, 100_000);
    expect(longestPlateau(series)).toBeLessThan(11);
  });
});

describe('stage rates: measured per model, scaled by frames and size', () => {
  it('the decode estimate of the next render is the measured rate times its megapixel-frames; kept in DATA_DIR', () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'stage-rates-')), 'stage-rates.json');
    const rates = new StageRates(file);
    const wan = { model: 'videogen-wan22-5b', width: 320, height: 192, video: { frames: 17 } } as const;
    expect(rates.estimate(wan)).toEqual({ decodeUnits: expect.closeTo(1.04448, 4) });
    rates.record(wan, { encodeMs: 4_000, decodeMs: 106_000 });
    // Twice the frames, twice the decode; the encode does not scale.
    const longer = { ...wan, video: { frames: 34 } };
    expect(new StageRates(file).estimate(longer)).toEqual({ encodeMs: 4_000, decodeMs: expect.closeTo(212_000, 3), decodeUnits: expect.closeTo(2.08896, 4) });
    // A moving average: the next measurement moves it half way.
    rates.record(wan, { decodeMs: 54_000 });
    expect(rates.estimate(wan).decodeMs).toBeCloseTo(80_000, 3);
    expect(decodeUnits({ width: 1280, height: 704, video: { frames: 121 } })).toBeCloseTo(109.05, 1);
  });
});

describe('textinfo says what happens', () => {
  it('waiting only when a render waits; stopping after an interrupt; decode and save as stages', async () => {
    const { textinfo, a1111Progress } = await import('../../src/api/a1111/discovery-routes.ts');
    expect(textinfo({ jobCount: 0 })).toBeNull();
    expect(textinfo({ jobCount: 1, pending: 'waiting' })).toBe('Waiting for a GPU');
    // Just handed to a GPU (the next item after a skip): not waiting for one.
    expect(textinfo({ jobCount: 1, pending: 'starting', pendingItem: { item: 2, items: 2 } })).toBe('Starting image 2/2');
    expect(textinfo({ jobCount: 1, pending: 'stopping' })).toBe('Stopping (interrupted)');
    expect((a1111Progress({ jobCount: 1, pending: 'stopping' }).state as { interrupted: boolean }).interrupted).toBe(true);
    expect(textinfo({ jobCount: 1, pending: 'done' })).toBe('Finishing');
    const current = { renderId: 'r', item: 0, items: 2, value: 0, max: 1, progress: 0.45, etaSeconds: 1 };
    expect(textinfo({ jobCount: 1, current: { ...current, phase: 'decoding' } })).toBe('Decoding (VAE) image 1/2');
    expect(textinfo({ jobCount: 1, current: { ...current, phase: 'saving' } })).toBe('Saving image 1/2');
    expect(textinfo({ jobCount: 1, current: { ...current, phase: 'encoding' } })).toBe('Encoding the prompt, image 1/2');
    expect(textinfo({ jobCount: 1, current: { ...current, value: 3, max: 8, phase: 'sampling' } })).toBe('Sampling step 3/8, image 1/2');
  });
});
