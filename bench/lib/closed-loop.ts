/**
 * Closed-loop load in steady state: `concurrency` clients call `one` back to back for `warmMs + windowMs`
 * without a pause between warm-up and window. Only calls that complete inside the window count, and
 * `sample()` (e.g. CPU times) is taken at the window's start and end, so the window neither starts empty
 * nor waits for stragglers: work and completions in it belong together.
 */
export interface SteadyLoad<S> {
  /** Calls that completed inside the window. */
  completed: number;
  perSecond: number;
  atStart: S;
  atEnd: S;
}

export async function steadyLoad<S>(opts: {
  concurrency: number;
  warmMs: number;
  windowMs: number;
  one: (client: number) => Promise<unknown>;
  sample: () => S;
}): Promise<SteadyLoad<S>> {
  const start = Date.now() + opts.warmMs;
  const end = start + opts.windowMs;
  let atStart: S | undefined;
  let atEnd: S | undefined;
  const timers = [setTimeout(() => (atStart = opts.sample()), opts.warmMs), setTimeout(() => (atEnd = opts.sample()), opts.warmMs + opts.windowMs)];
  let completed = 0;
  try {
    await Promise.all(
      Array.from({ length: opts.concurrency }, async (_, c) => {
        while (Date.now() < end) {
          await opts.one(c);
          const at = Date.now();
          if (at >= start && at < end) completed++;
        }
      }),
    );
  } finally {
    for (const t of timers) clearTimeout(t);
  }
  // Every client ran past `end`, so both samples were taken (a late timer still fires before we get here).
  return { completed, perSecond: completed / (opts.windowMs / 1000), atStart: atStart ?? opts.sample(), atEnd: atEnd ?? opts.sample() };
}
