import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ItemProgress, RISE_PER_EFOLD, silentFraction, STAGE_ENDS, type StageEstimate } from '../../src/activities/item-progress.ts';
import { silentStagePriors } from '../../src/models/stage-priors.ts';
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

  it('silentFraction: linear to 55 % of the share at the expected time, then 0.12 per e-fold of the item time, up to its limit', () => {
    const stage = { from: 0.6, to: 0.96, limit: 0.985, startedAt: 10_000, expectedMs: 20_000 };
    expect(silentFraction(stage, 10_000)).toBe(0.6);
    expect(silentFraction(stage, 20_000)).toBeCloseTo(0.6 + 0.36 * 0.275);
    const atExpected = 0.6 + 0.36 * 0.55;
    expect(silentFraction(stage, 30_000)).toBeCloseTo(atExpected);
    // The time constant is the item's elapsed time: twice the time since the item started, 0.12 × ln 2 more.
    expect(silentFraction(stage, 60_000)).toBeCloseTo(atExpected + RISE_PER_EFOLD * Math.LN2);
    expect(silentFraction(stage, 120_000) - silentFraction(stage, 60_000)).toBeCloseTo(RISE_PER_EFOLD * Math.LN2);
    expect(silentFraction(stage, 1e12)).toBe(0.985);
  });

  it('a decode five times longer than measured: still no percent held for a tenth of the render', () => {
    const series = decodeSeries(20_000, 100_000);
    expect(longestPlateau(series)).toBeLessThan(11);
  });
});

describe('stage rates: measured per model, scaled by frames and size', () => {
  it('the decode estimate of the next render is the measured rate times its megapixel-frames; kept in DATA_DIR', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'stage-rates-')), 'stage-rates.json');
    const rates = new StageRates(file);
    const wan = { model: 'videogen-wan22-5b', width: 320, height: 192, video: { frames: 17 } } as const;
    expect(rates.estimate(wan)).toEqual({ decodeUnits: expect.closeTo(1.04448, 4) });
    rates.record(wan, { encodeMs: 4_000, decodeMs: 106_000 });
    await rates.flush();
    // Twice the frames, twice the decode; the encode does not scale.
    const longer = { ...wan, video: { frames: 34 } };
    expect(new StageRates(file).estimate(longer)).toEqual({ encodeMs: 4_000, decodeMs: expect.closeTo(212_000, 3), decodeUnits: expect.closeTo(2.08896, 4) });
    // A moving average: the next measurement moves it half way.
    rates.record(wan, { decodeMs: 54_000 });
    expect(rates.estimate(wan).decodeMs).toBeCloseTo(80_000, 3);
    expect(decodeUnits({ width: 1280, height: 704, video: { frames: 121 } })).toBeCloseTo(109.05, 1);
  });

  it('renders recorded while the file is being written are all in it once the writes are done', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'stage-rates-')), 'stage-rates.json');
    const rates = new StageRates(file);
    const models = Array.from({ length: 5 }, (_, i) => ({ model: `m${i}`, width: 1000, height: 1000 }));
    for (const m of models) rates.record(m, { encodeMs: 100 });
    await rates.flush();
    const reread = new StageRates(file);
    for (const m of models) expect(reread.estimate(m).encodeMs).toBe(100);
    // A record after the writes ended starts another one.
    rates.record({ model: 'late', width: 1000, height: 1000 }, { encodeMs: 7 });
    await rates.flush();
    expect(new StageRates(file).estimate({ model: 'late', width: 1000, height: 1000 }).encodeMs).toBe(7);
  });

  it("a model no render measured yet carries its family's priors; a measured one keeps them beside its rates", () => {
    const rates = new StageRates();
    const wan = { model: 'videogen-wan22-5b', width: 320, height: 192, video: { frames: 17 } } as const;
    const prior = silentStagePriors(wan.model)!;
    expect(rates.estimate(wan, prior)).toEqual({ decodeUnits: expect.closeTo(1.04448, 4), prior });
    rates.record(wan, { decodeMs: 10_000 });
    expect(rates.estimate(wan, prior)).toMatchObject({ decodeMs: expect.closeTo(10_000, 3), prior });
    expect(silentStagePriors('no-such-model')).toBeUndefined();
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

/**
 * Whole items with fake time, ticked every second as run-prompt.ts does: the longest time one integer percent
 * (what /v1/videos shows; /sdapi/v1/progress shows the same fraction) is held, against the item's length.
 */
describe('first renders of a model: no percent held for a tenth of the render, whatever the box', () => {
  const wan: ComfyGraph = {
    unet: node('UNETLoader'),
    clip: node('CLIPLoader'),
    positive: node('CLIPTextEncode'),
    negative: node('CLIPTextEncode'),
    sampler: node('KSampler'),
    decode: node('VAEDecode'),
    create_video: node('CreateVideo'),
    save: node('SaveVideo'),
  };
  interface Timeline {
    loadMs: number;
    encodeMs: number;
    steps: number;
    samplingMs: number;
    decodeMs: number;
    saveMs: number;
  }

  function run(t: Timeline, estimate: StageEstimate): { series: { at: number; fraction: number }[]; total: number } {
    const p = new ItemProgress(wan, true, estimate);
    const series: { at: number; fraction: number }[] = [];
    const events: [number, string, number | undefined, number | undefined][] = [[0, 'unet', 0, 1]];
    let at = t.loadMs;
    events.push([at, 'positive', undefined, undefined], [at + t.encodeMs / 2, 'negative', undefined, undefined]);
    at += t.encodeMs;
    for (let s = 0; s <= t.steps; s++) events.push([at + (t.samplingMs * s) / t.steps, 'sampler', s, t.steps]);
    at += t.samplingMs;
    events.push([at, 'decode', undefined, undefined]);
    at += t.decodeMs;
    events.push([at, 'create_video', undefined, undefined]);
    const total = at + t.saveMs;
    let next = 0;
    for (let now = 0; now <= total; now += 1_000) {
      while (next < events.length && events[next]![0] <= now) {
        const [when, id, value, max] = events[next++]!;
        series.push({ at: when, fraction: p.update(id, value, max, when).fraction });
      }
      series.push({ at: now, fraction: p.tick(now).fraction });
    }
    return { series, total };
  }

  /** The longest time (ms) one integer percent was shown. */
  function longestHeld(series: { at: number; fraction: number }[]): number {
    let best = 0;
    let since = series[0]!.at;
    for (let i = 1; i < series.length; i++) {
      if (Math.floor(series[i]!.fraction * 100) !== Math.floor(series[i - 1]!.fraction * 100)) since = series[i]!.at;
      best = Math.max(best, series[i]!.at - since);
    }
    return best;
  }

  const units = 320 * 192 * 17 * 1e-6;
  const firstWan: StageEstimate = { decodeUnits: units, prior: silentStagePriors('videogen-wan22-5b')! };

  it('the Wan 2.2 priors come from its family', () => {
    expect(firstWan.prior).toEqual({ encodeMs: 5_000, decodeMsPerUnit: 1_000 });
  });

  it("issue 28's first Wan render on a CPU (encode 721 s, decode 837 s of 1583 s): rises through both", () => {
    const { series, total } = run({ loadMs: 14_000, encodeMs: 721_000, steps: 4, samplingMs: 7_000, decodeMs: 837_000, saveMs: 4_000 }, firstWan);
    for (let i = 1; i < series.length; i++) expect(series[i]!.fraction).toBeGreaterThanOrEqual(series[i - 1]!.fraction);
    expect(longestHeld(series)).toBeLessThan(total / 10);
    // Through the decode it rose by more than a few points (not held at 95 % as before).
    const decodeStart = series.find((s) => s.at >= 742_000)!.fraction;
    const decodeEnd = series.filter((s) => s.at < 1_579_000).at(-1)!.fraction;
    expect(decodeEnd - decodeStart).toBeGreaterThan(0.1);
    expect(decodeEnd).toBeLessThan(STAGE_ENDS.video.decoding);
  });

  it('a first Wan render on a GPU (30 steps in 8 min, 100 s decode of a 109-unit clip): smooth, and the decode follows the prior', () => {
    const { series, total } = run(
      { loadMs: 20_000, encodeMs: 5_000, steps: 30, samplingMs: 480_000, decodeMs: 100_000, saveMs: 5_000 },
      { ...firstWan, decodeUnits: 109 },
    );
    expect(longestHeld(series)).toBeLessThan(total / 10);
    // Expected: the prior's 109 s, or a quarter of the 505 s before the decode when longer (126 s): 100 s in, 79 % of 55 %.
    const decodeEnd = series.filter((s) => s.at < 605_000).at(-1)!.fraction;
    expect(decodeEnd).toBeCloseTo(STAGE_ENDS.video.sampling + 0.36 * 0.55 * (100 / 126.25), 2);
    // The encode took its prior: sampling starts where its share does.
    expect(series.find((s) => s.at >= 25_000)!.fraction).toBeLessThan(STAGE_ENDS.video.encoding + 0.01);
  });

  it('a box ten times faster than the prior jumps forward; one a hundred times slower still rises', () => {
    const fast = run({ loadMs: 2_000, encodeMs: 500, steps: 30, samplingMs: 48_000, decodeMs: 10_000, saveMs: 500 }, { ...firstWan, decodeUnits: 109 });
    expect(longestHeld(fast.series)).toBeLessThan(fast.total / 10);
    const slow = run({ loadMs: 60_000, encodeMs: 500_000, steps: 2, samplingMs: 60_000, decodeMs: 1_000_000, saveMs: 5_000 }, firstWan);
    expect(longestHeld(slow.series)).toBeLessThan(slow.total / 10);
  });

  it('a measured rate five times too short (the box got slower): still no percent held for a tenth of the render', () => {
    const { series, total } = run(
      { loadMs: 5_000, encodeMs: 20_000, steps: 4, samplingMs: 40_000, decodeMs: 300_000, saveMs: 2_000 },
      { ...firstWan, encodeMs: 20_000, decodeMs: 60_000 },
    );
    expect(longestHeld(series)).toBeLessThan(total / 10);
  });
});
