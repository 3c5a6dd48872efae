/**
 * How far one item is, as a fraction that only rises: the sampler nodes share the first part (in the order
 * they run; a hires fix has two), the final decode the next (VAE decode is seconds for an image and minutes
 * for a video, during which ComfyUI reports nothing but a 0/1 bar: the fraction creeps on with time there),
 * saving the rest. Nodes before the first sampler (loaders, text encoders) and between samplers keep it where
 * it is. `phase` says which stage runs, for `textinfo`.
 */
import type { ComfyGraph } from '../comfyui/graph.ts';

export type ItemPhase = 'starting' | 'sampling' | 'decoding' | 'saving';

const SAMPLERS = new Set(['KSampler', 'KSamplerAdvanced', 'SamplerCustomAdvanced', 'SamplerCustom']);
const isDecode = (cls: string): boolean => cls.startsWith('VAEDecode') || /Decode/.test(cls);
const isSave = (cls: string): boolean => cls.startsWith('Save') || cls === 'CreateVideo';

export class ItemProgress {
  private readonly samplers: string[];
  private readonly shares: { sampling: number; decode: number };
  private readonly decodeRatio: number;
  private fraction = 0;
  private phase: ItemPhase = 'starting';
  private samplingStartedAt: number | undefined;
  private decodeStartedAt: number | undefined;
  private decodeFrom = 0;
  private finished = new Set<string>();

  constructor(
    private readonly graph: ComfyGraph,
    video: boolean,
  ) {
    this.samplers = Object.keys(graph).filter((id) => SAMPLERS.has(graph[id]!.class_type));
    this.shares = video ? { sampling: 0.6, decode: 0.35 } : { sampling: 0.85, decode: 0.1 };
    // Expected decode time against the sampling time, for the creep while the decode reports nothing.
    this.decodeRatio = video ? 1 : 0.2;
  }

  /** A progress event of `node` (value/max of its bar). */
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
        this.raise((this.shares.sampling * (idx + within)) / Math.max(1, this.samplers.length));
      } else if (this.samplersDone() && isSave(cls)) {
        this.phase = 'saving';
        this.raise(this.shares.sampling + this.shares.decode);
      } else if (this.samplersDone() && isDecode(cls) && this.phase !== 'saving') {
        if (this.decodeStartedAt === undefined) {
          this.decodeStartedAt = now;
          this.decodeFrom = Math.max(this.fraction, this.shares.sampling);
          this.raise(this.decodeFrom);
        }
        this.phase = 'decoding';
      }
    }
    return this.tick(now);
  }

  /** Time passing without events: the decode creeps on towards its end, never reaching it. */
  tick(now: number): { fraction: number; phase: ItemPhase } {
    if (this.phase === 'decoding' && this.decodeStartedAt !== undefined) {
      const samplingMs = this.samplingStartedAt !== undefined ? this.decodeStartedAt - this.samplingStartedAt : 0;
      const tau = Math.max(2_000, samplingMs * this.decodeRatio);
      const end = this.shares.sampling + this.shares.decode;
      this.raise(this.decodeFrom + (end - this.decodeFrom) * (1 - Math.exp(-(now - this.decodeStartedAt) / tau)));
    }
    return { fraction: this.fraction, phase: this.phase };
  }

  private samplersDone(): boolean {
    return this.samplers.length === 0 || this.samplers.every((s) => this.finished.has(s));
  }

  private raise(f: number): void {
    if (f > this.fraction) this.fraction = Math.min(0.99, f);
  }
}
