/**
 * Which waiting prompt attempt a free ComfyUI takes next (backends/gpu-pool.ts). Loading another image model
 * costs 10–33 s on a 24 GB card (45 s–3 min cold), so among the attempts of the most urgent priority the one
 * for the model the backend last ran goes first; to keep that from starving anyone, an attempt that has waited
 * `maxPassOverMs` goes first whatever it needs. A pure function of the queue, the loaded model and the time, so
 * the order is the same whenever the same state is seen (unit tests give it a clock).
 */
export interface QueuedAttempt {
  /** Arrival order in this worker: first in, first out among equals. */
  seq: number;
  /** Temporal priority key: lower goes first (contracts/priority.ts). */
  priority: number;
  model?: string;
  /** When it started waiting here (ms). */
  queuedAt: number;
}

export interface DispatchPolicy {
  /** How long an attempt may be passed over for the loaded model's (ms); 0: first in, first out. */
  maxPassOverMs: number;
}

/** The attempt the backend that last ran `loaded` (undefined: nothing yet) takes now, or undefined for none. */
export function nextAttempt<T extends QueuedAttempt>(queue: readonly T[], loaded: string | undefined, now: number, policy: DispatchPolicy): T | undefined {
  if (queue.length === 0) return undefined;
  const urgent = Math.min(...queue.map((q) => q.priority));
  const tier = queue.filter((q) => q.priority === urgent).sort((a, b) => a.seq - b.seq);
  const oldest = tier[0]!;
  if (now - oldest.queuedAt >= policy.maxPassOverMs) return oldest;
  return tier.find((q) => loaded !== undefined && q.model === loaded) ?? oldest;
}
