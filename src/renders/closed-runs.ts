/**
 * The render runs this front waits on, and what its own workers tell it of their ends (src/worker/run-closures.ts,
 * through the worker thread's port in `start`):
 * - `closing`: the workflow task that completes the run was sent to the server, with this result. Not yet
 *   accepted: the front may prepare its answer from it, never send it;
 * - `closed`: the server accepted it; the run is closed with this result. The front answers from it without
 *   waiting on Temporal's history long poll (bench/README.md, issue 25, ninth pass).
 *
 * Only what someone waits on is kept: news of a run nobody waits for (a render another front started, a
 * webhook's workflow, a wait that already ended) is dropped, and a render whose close is never told here (run
 * by another process's worker, or failed) is answered by the long poll, which every wait keeps running beside.
 */
import type { ClosedRun, PlainPayload } from '../contracts/closed-run.ts';

export interface RunWait {
  /** Resolves with the run's result once a worker of this process tells its close; never rejects. */
  result: Promise<PlainPayload>;
  /** The wait ended another way: forget it. */
  stop(): void;
}

interface Waiter {
  closing?: (result: PlainPayload) => void;
  closed: (result: PlainPayload) => void;
}

export class ClosedRuns {
  private readonly waiting = new Map<string, Set<Waiter>>();

  /** A worker sent the completion of this run (not yet accepted: see above). */
  readonly closing = (run: ClosedRun): void => {
    for (const w of this.waiting.get(run.runId) ?? []) w.closing?.(run.result);
  };

  /** The server accepted the run's completion. */
  readonly closed = (run: ClosedRun): void => {
    const waiters = this.waiting.get(run.runId);
    if (!waiters) return;
    this.waiting.delete(run.runId);
    for (const w of waiters) w.closed(run.result);
  };

  /** `onClosing`: each completion sent for the run while this wait lasts (a refused one may be followed by another). */
  waitFor(runId: string, onClosing?: (result: PlainPayload) => void): RunWait {
    let closed!: (result: PlainPayload) => void;
    const result = new Promise<PlainPayload>((r) => (closed = r));
    const waiter: Waiter = { closed, ...(onClosing ? { closing: onClosing } : {}) };
    const waiters = this.waiting.get(runId) ?? new Set();
    waiters.add(waiter);
    this.waiting.set(runId, waiters);
    return {
      result,
      stop: () => {
        waiters.delete(waiter);
        if (waiters.size === 0 && this.waiting.get(runId) === waiters) this.waiting.delete(runId);
      },
    };
  }

  /** Runs waited on now (tests: nothing is left behind). */
  get size(): number {
    return this.waiting.size;
  }
}
