/**
 * How far one item is, as a fraction that only rises, stage by stage: loading, text encoding, the sampler
 * nodes (in the order they run; a hires fix has two), the final decode, saving. Sampling reports its steps;
 * the text encoders and the decode report nothing but a 0/1 bar (a video's VAE decode is minutes), so
 * there the fraction moves with time against what that stage is expected to take (`StageEstimate`:
 * measured on earlier renders of the model, src/activities/stage-rates.ts, else the model family's prior).
 * Past the expected time it keeps rising at a pace set by the time spent (`silentFraction`), into the next
 * stage's share if it must: an estimate that is wrong shows as a slower rise or a jump forward, never as a
 * percent held for a tenth of the render. `phase` says which stage runs, for `textinfo`.
 */
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { SilentStagePriors } from '../models/stage-priors.ts';

export type ItemPhase = 'starting' | 'encoding' | 'sampling' | 'decoding' | 'saving';

const SAMPLERS = new Set(['KSampler', 'KSamplerAdvanced', 'SamplerCustomAdvanced', 'SamplerCustom']);
const isDecode = (cls: string): boolean => cls.startsWith('VAEDecode') || /Decode/.test(cls);
const isSave = (cls: string): boolean => cls.startsWith('Save') || cls === 'CreateVideo';
/** CLIPTextEncode, TextEncodeQwenImageEdit(Plus), CLIPTextEncodeFlux, … */
const isTextEncode = (cls: string): boolean => /TextEncode/.test(cls);

/** Where each stage ends, as a fraction of the item. Image: sampling is most of it; video: the decode is long. */
export const STAGE_ENDS = {
  image: { starting: 0.01, encoding: 0.05, sampling: 0.87, decoding: 0.96 },
  video: { starting: 0.01, encoding: 0.06, sampling: 0.6, decoding: 0.96 },
} as const;

/** Share of a silent stage's nominal span reached at its expected time (linear up to there: the estimate is trusted). */
const SHARE_AT_EXPECTED = 0.55;
/**
 * Past its expected time a silent stage rises by this much of the item per e-fold of the item's elapsed time:
 * 1.1 points for every 10 % more time, so no percent is held for a tenth of the time spent (hence of the render),
 * however wrong the estimate. Its time constant stretches with the time spent: the first render of a model on a
 * box far slower than its family's prior (a CPU) rises steadily through a decode of many minutes.
 */
export const RISE_PER_EFOLD = 0.12;
/** Item time below which the rise does not start counting (a first second of cached loaders is no yardstick). */
const MIN_ELAPSED_MS = 1_000;
/**
 * How far a silent stage may run past its nominal end: text encoding into the sampling share (sampling then
 * spreads its steps over what is left of it, at least a fifth), the decode into the save's.
 */
const OVERRUN = { encodingIntoSampling: 0.8, decodingLimit: 0.985 };

/** A silent stage: where its share starts and nominally ends, how far it may run, when it started, what it should take. */
export interface SilentStage {
  from: number;
  to: number;
  limit: number;
  /** ms since the item started when the stage started. */
  startedAt: number;
  expectedMs: number;
}

/**
 * The item's fraction `at` ms after the item started, in a silent stage: linear to 55 % of its share at the
 * expected time, then rising `RISE_PER_EFOLD` per e-fold of the item's elapsed time, up to the stage's limit.
 */
export function silentFraction(stage: SilentStage, at: number): number {
  const expected = Math.max(1, stage.expectedMs);
  const elapsed = Math.max(0, at - stage.startedAt);
  const share = stage.to - stage.from;
  if (elapsed <= expected) return Math.min(stage.limit, stage.from + (share * SHARE_AT_EXPECTED * elapsed) / expected);
  const itemAt = (t: number): number => Math.max(MIN_ELAPSED_MS, t);
  const overrun = RISE_PER_EFOLD * Math.log(itemAt(at) / itemAt(stage.startedAt + expected));
  return Math.min(stage.limit, stage.from + share * SHARE_AT_EXPECTED + overrun);
}

/** What the silent stages are expected to take (ms), when measured; else the model family's prior, else a guess (below). */
export interface StageEstimate {
  encodeMs?: number;
  decodeMs?: number;
  /** The decode's size (output megapixels × frames), for the prior's rate when no rate is measured yet. */
  decodeUnits?: number;
  /** The model family's priors (src/models/stage-priors.ts), for a model no render measured yet. */
  prior?: SilentStagePriors;
}

/** Without a measurement or a prior (a model this worker does not know): text encoding half a minute, a second per unit. */
const GUESS_ENCODE_MS = 30_000;
const GUESS_DECODE_MS_PER_UNIT = 1_000;
/**
 * And, unmeasured, at least this share of the item's time before the decode: a box much slower than the
 * prior's GPU is slow in the decode too (a CPU decodes a Wan clip for as long as it encoded and sampled it).
 */
const GUESS_DECODE_OF_BEFORE = { image: 0.1, video: 0.25 };
const MIN_GUESS_MS = 1_000;

export class ItemProgress {
  private readonly samplers: string[];
  private readonly ends: (typeof STAGE_ENDS)[keyof typeof STAGE_ENDS];
  private readonly kind: 'image' | 'video';
  private fraction = 0;
  private phase: ItemPhase = 'starting';
  /** The first event's time: silent stages measure their time against the item's. */
  private itemStartedAt: number | undefined;
  private encodeStartedAt: number | undefined;
  private encoding: SilentStage | undefined;
  private samplingStartedAt: number | undefined;
  /** Where sampling's share starts: after the encode's nominal end, or later when the encode ran over. */
  private samplingFrom: number;
  private decodeStartedAt: number | undefined;
  private decoding: SilentStage | undefined;
  private saveStartedAt: number | undefined;
  private readonly finished = new Set<string>();

  constructor(
    private readonly graph: ComfyGraph,
    video: boolean,
    private readonly estimate: StageEstimate = {},
  ) {
    this.samplers = Object.keys(graph).filter((id) => SAMPLERS.has(graph[id]!.class_type));
    this.kind = video ? 'video' : 'image';
    this.ends = STAGE_ENDS[this.kind];
    this.samplingFrom = this.ends.encoding;
  }

  /** A progress event of `node` (value/max of its bar; `executing` events carry the node only). */
  update(node: string | undefined, value: number | undefined, max: number | undefined, now: number): { fraction: number; phase: ItemPhase } {
    this.itemStartedAt ??= now;
    const cls = node !== undefined ? this.graph[node]?.class_type : undefined;
    if (cls !== undefined && node !== undefined) {
      const idx = this.samplers.indexOf(node);
      if (idx >= 0) {
        if (this.samplingStartedAt === undefined) {
          this.samplingStartedAt = now;
          this.samplingFrom = Math.max(this.ends.encoding, this.fraction);
        }
        this.phase = 'sampling';
        const within = max !== undefined && max > 0 && value !== undefined ? Math.min(1, value / max) : 0;
        if (within >= 1) this.finished.add(node);
        for (let i = 0; i < idx; i++) this.finished.add(this.samplers[i]!);
        const span = this.ends.sampling - this.samplingFrom;
        this.raise(this.samplingFrom + (span * (idx + within)) / Math.max(1, this.samplers.length));
      } else if (this.samplersDone() && isSave(cls)) {
        this.saveStartedAt ??= now;
        this.phase = 'saving';
        this.raise(this.ends.decoding);
      } else if (this.samplersDone() && isDecode(cls) && this.phase !== 'saving') {
        if (this.decodeStartedAt === undefined) {
          this.decodeStartedAt = now;
          this.raise(this.ends.sampling);
          this.decoding = this.silentStage(this.fraction, this.ends.decoding, OVERRUN.decodingLimit, now, this.expectedDecodeMs());
        }
        this.phase = 'decoding';
      } else if (this.samplingStartedAt === undefined && isTextEncode(cls)) {
        if (this.encodeStartedAt === undefined) {
          this.encodeStartedAt = now;
          this.raise(this.ends.starting);
          const limit = this.ends.encoding + OVERRUN.encodingIntoSampling * (this.ends.sampling - this.ends.encoding);
          this.encoding = this.silentStage(this.fraction, this.ends.encoding, limit, now, this.expectedEncodeMs());
        }
        this.phase = 'encoding';
      } else if (this.phase === 'starting') {
        this.raise(this.ends.starting / 2);
      }
    }
    return this.tick(now);
  }

  /** Time passing without events: a silent stage (text encoding, the decode) moves on against its expected time. */
  tick(now: number): { fraction: number; phase: ItemPhase } {
    this.itemStartedAt ??= now;
    const stage = this.phase === 'encoding' ? this.encoding : this.phase === 'decoding' ? this.decoding : undefined;
    if (stage) this.raise(silentFraction(stage, now - this.itemStartedAt));
    return { fraction: this.fraction, phase: this.phase };
  }

  /** Text encoding's expected time: measured for this model, else its family's prior, else a guess. */
  expectedEncodeMs(): number {
    return this.estimate.encodeMs ?? this.estimate.prior?.encodeMs ?? GUESS_ENCODE_MS;
  }

  /**
   * The decode's expected time: measured for this model; else its family's rate times the decode's size, but
   * at least a share of the time the item took so far (a slow box is slow everywhere).
   */
  expectedDecodeMs(): number {
    if (this.estimate.decodeMs !== undefined) return this.estimate.decodeMs;
    const before = this.decodeStartedAt !== undefined && this.itemStartedAt !== undefined ? this.decodeStartedAt - this.itemStartedAt : 0;
    const byRate = (this.estimate.decodeUnits ?? 0) * (this.estimate.prior?.decodeMsPerUnit ?? GUESS_DECODE_MS_PER_UNIT);
    return Math.max(MIN_GUESS_MS, byRate, before * GUESS_DECODE_OF_BEFORE[this.kind]);
  }

  /**
   * How long the silent stages took, once the prompt finished at `end` (for the next render's estimate):
   * text encoding up to the first sampler step, the decode up to the save (or the end).
   */
  measured(end: number): { encodeMs?: number; decodeMs?: number } {
    const out: { encodeMs?: number; decodeMs?: number } = {};
    if (this.encodeStartedAt !== undefined && this.samplingStartedAt !== undefined) out.encodeMs = this.samplingStartedAt - this.encodeStartedAt;
    if (this.decodeStartedAt !== undefined) out.decodeMs = (this.saveStartedAt ?? end) - this.decodeStartedAt;
    return out;
  }

  private silentStage(from: number, to: number, limit: number, now: number, expectedMs: number): SilentStage {
    return { from, to: Math.max(from, to), limit: Math.max(from, limit), startedAt: now - (this.itemStartedAt ?? now), expectedMs };
  }

  private samplersDone(): boolean {
    return this.samplers.length === 0 || this.samplers.every((s) => this.finished.has(s));
  }

  private raise(f: number): void {
    if (f > this.fraction) this.fraction = Math.min(0.99, f);
  }
}
