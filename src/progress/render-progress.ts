/**
 * A running render's progress, read one way by every route that shows it (`/sdapi/v1/progress`,
 * `/v1/videos/{id}`): from its GPU attempt's heartbeat — the item's own rising fraction (sampling, then the
 * silent stages timed against what they are expected to take, src/activities/item-progress.ts) and the
 * item's place in the render — as `(item + fraction) / items`. A front remembers the highest value it has
 * shown for each render, so nothing it says goes back: not a retry that starts an item afresh, not an
 * interrupt or a skip while the stopped prompt is wound down (the heartbeat is then gone, the render not
 * yet ended).
 */
import type { PromptHeartbeat } from '../contracts/activities.ts';

/** The item's fraction (0..1) from its heartbeat; `afterSampler` places a node after the sampler (older heartbeats without a fraction). */
export function itemFraction(beat: Partial<PromptHeartbeat>, afterSampler?: number): number {
  if (typeof beat.fraction === 'number') return clamp01(beat.fraction);
  if (afterSampler !== undefined) return clamp01(afterSampler);
  const value = typeof beat.value === 'number' && beat.value >= 0 ? beat.value : 0;
  const max = typeof beat.max === 'number' && beat.max > 0 ? beat.max : 0;
  return max > 0 ? clamp01(value / max) : 0;
}

/** The render's fraction: `item` of `items` done, and the running one at `fraction`. */
export function renderFraction(item: number, items: number, fraction: number): number {
  const n = Math.max(1, items);
  const i = Math.min(n - 1, Math.max(0, item));
  return clamp01((i + fraction) / n);
}

/** `/sdapi/v1/progress`' value of a render's fraction: four decimals, as A1111 clients read it. */
export function progressValue(fraction: number): number {
  return Math.round(clamp01(fraction) * 10_000) / 10_000;
}

/**
 * `/v1/videos`' integer percent of a render's fraction: the value `/sdapi/v1/progress` shows, ×100, rounded
 * down (0.049996 shows as 0.05 there and 5 here, not 4).
 */
export function percent(fraction: number): number {
  return Math.floor(Math.round(clamp01(fraction) * 10_000) / 100 + 1e-9);
}

const MAX_REMEMBERED = 1_000;
const FORGET_AFTER_MS = 6 * 3_600_000;

/** The highest progress shown per render (a bounded map: renders end, and a front may run for weeks). */
export class ProgressMemory {
  private readonly shown = new Map<string, { fraction: number; at: number }>();

  /** `fraction` for `renderId`, never below what was shown for it before; remembered. */
  raise(renderId: string, fraction: number, now = Date.now()): number {
    const best = Math.max(fraction, this.shown.get(renderId)?.fraction ?? 0);
    this.shown.delete(renderId);
    this.shown.set(renderId, { fraction: best, at: now });
    for (const [id, v] of this.shown) {
      if (this.shown.size <= MAX_REMEMBERED && now - v.at < FORGET_AFTER_MS) break;
      this.shown.delete(id);
    }
    return best;
  }

  get(renderId: string): number | undefined {
    return this.shown.get(renderId)?.fraction;
  }
}

/** One per front process: the A1111 and the video routes show the same render the same way. */
export const progressMemory = new ProgressMemory();

const clamp01 = (v: number): number => (Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0);
