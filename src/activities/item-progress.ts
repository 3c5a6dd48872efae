/**
 * How far one item is, as a fraction that only rises, stage by stage: loading, text encoding, the sampler
 * nodes (in the order they run; a hires fix has two), the final decode, saving. Sampling reports its steps;
 * the text encoders and the decode report nothing but a 0/1 bar (a video's VAE decode is minutes), so
 * there the fraction moves with time against what that stage is expected to take (`StageEstimate`:
 * measured on earlier renders of the model, src/activities/stage-rates.ts). Past the expected time it keeps
 * rising, ever slower (`creep`), and reaches the stage's end only when the stage ends: an estimate that is
 * wrong shows as a slower rise, not as a plateau. `phase` says which stage runs, for `textinfo`.
 */
import type { ComfyGraph } from '../comfyui/graph.ts';

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

/** Share of a silent stage reached at its expected time; past it, each e-fold of time adds `CREEP_TAIL`. */
const CREEP_AT_EXPECTED = 0.55;
const CREEP_TAIL = 0.28;
const CREEP_MAX = 0.99;

/**
 * The fraction of a silent stage done after `elapsedMs` of an expected `expectedMs`: linear to 55 % at the
 * expected time, then logarithmic (each doubling adds a fifth of the stage), so a stage that takes up to
 * five times its estimate still rises at a rate proportional to 1/elapsed — never standing still for a
 * tenth of the time spent so far — and reaches the stage's end only when it really ends.
 */
export function creep(elapsedMs: number, expectedMs: number): number {
  const e = Math.max(1, expectedMs);
  const t = Math.max(0, elapsedMs);
  return t <= e ? (CREEP_AT_EXPECTED * t) / e : Math.min(CREEP_MAX, CREEP_AT_EXPECTED + CREEP_TAIL * Math.log(t / e));
}

/** What the silent stages are expected to take (ms), when known; unknown stages take a guess (below). */
export interface StageEstimate {
  encodeMs?: number;
  decodeMs?: number;
  /** The decode's size (output megapixels × frames), for the guess when no rate is measured yet. */
  decodeUnits?: number;
}

/**
 * Without a measurement (the first render of a model on a worker): text encoding half a minute (a large encoder
 * on a slow box; a guess too long shows as a jump forward when sampling starts, one too short as a stall), the
 * decode against the sampling time.
 */
const GUESS_ENCODE_MS = 30_000;
const GUESS_DECODE_OF_SAMPLING = { image: 0.2, video: 1 };
/**
 * And at least this per output megapixel-frame: a slow decode, so that a first render on a fast GPU jumps
 * forward when its decode ends early rather than a first render on a slow box stalling at the stage's end.
 */
const GUESS_DECODE_MS_PER_UNIT = { image: 1_000, video: 10_000 };
const MIN_GUESS_MS = 2_000;

export class ItemProgress {
  private readonly samplers: string[];
  private readonly ends: (typeof STAGE_ENDS)[keyof typeof STAGE_ENDS];
  private readonly kind: 'image' | 'video';
  private fraction = 0;
  private phase: ItemPhase = 'starting';
  private encodeStartedAt: number | undefined;
  private samplingStartedAt: number | undefined;
  private decodeStartedAt: number | undefined;
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
  }

  /** A progress event of `node` (value/max of its bar; `executing` events carry the node only). */
  update(node: string | undefined, value: number | undefined, max: number | undefined, now: number): { fraction: number; phase: ItemPhase } {
    const cls = node !== undefined ? this.graph[node]?.class_type : undefined;
    if (cls !== undefined && node !== undefined) {
      const idx = this.samplers.indexOf(node);
      if (idx >= 0) {
        this.samplingStartedAt ??= now;
        this.phase = 'sampling';
        const within = max !== undefined && max > 0 && value !== undefined ? Math.min(1, value / max) : 0;
        if (within >= 1) this.finished.add(node);
        for (let i = 0; i < idx; i++) this.finished.add(this.samplers[i]!);
        const span = this.ends.sampling - this.ends.encoding;
        this.raise(this.ends.encoding + (span * (idx + within)) / Math.max(1, this.samplers.length));
      } else if (this.samplersDone() && isSave(cls)) {
        this.saveStartedAt ??= now;
        this.phase = 'saving';
        this.raise(this.ends.decoding);
      } else if (this.samplersDone() && isDecode(cls) && this.phase !== 'saving') {
        this.decodeStartedAt ??= now;
        this.phase = 'decoding';
        this.raise(this.ends.sampling);
      } else if (this.samplingStartedAt === undefined && isTextEncode(cls)) {
        this.encodeStartedAt ??= now;
        this.phase = 'encoding';
        this.raise(this.ends.starting);
      } else if (this.phase === 'starting') {
        this.raise(this.ends.starting / 2);
      }
    }
    return this.tick(now);
  }

  /** Time passing without events: a silent stage (text encoding, the decode) moves on against its expected time. */
  tick(now: number): { fraction: number; phase: ItemPhase } {
    if (this.phase === 'encoding' && this.encodeStartedAt !== undefined) {
      const expected = this.estimate.encodeMs ?? GUESS_ENCODE_MS;
      this.raise(this.ends.starting + (this.ends.encoding - this.ends.starting) * creep(now - this.encodeStartedAt, expected));
    } else if (this.phase === 'decoding' && this.decodeStartedAt !== undefined) {
      this.raise(this.ends.sampling + (this.ends.decoding - this.ends.sampling) * creep(now - this.decodeStartedAt, this.expectedDecodeMs()));
    }
    return { fraction: this.fraction, phase: this.phase };
  }

  /** The decode's expected time: measured for this model, else a guess from the sampling time and the decode's size. */
  expectedDecodeMs(): number {
    if (this.estimate.decodeMs !== undefined) return this.estimate.decodeMs;
    const samplingMs = this.samplingStartedAt !== undefined && this.decodeStartedAt !== undefined ? this.decodeStartedAt - this.samplingStartedAt : 0;
    const bySize = (this.estimate.decodeUnits ?? 0) * GUESS_DECODE_MS_PER_UNIT[this.kind];
    return Math.max(MIN_GUESS_MS, samplingMs * GUESS_DECODE_OF_SAMPLING[this.kind], bySize);
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

  private samplersDone(): boolean {
    return this.samplers.length === 0 || this.samplers.every((s) => this.finished.has(s));
  }

  private raise(f: number): void {
    if (f > this.fraction) this.fraction = Math.min(0.99, f);
  }
}
