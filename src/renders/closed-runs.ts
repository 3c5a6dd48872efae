/**
 * The render runs this front waits on, and the closes its own workers tell it of (src/worker/run-closures.ts,
 * through the worker thread's port in `start`): a run closed on the server is answered from here without
 * waiting on Temporal's history long poll (~2.7 ms later; bench/README.md, issue 25, ninth pass).
 *
 * Only what someone waits on is kept: a close nobody waits for (a render another front started, a webhook's
 * workflow, a wait that already ended) is dropped, and a render whose close is never told here (run by another
 * process's worker, or failed) is answered by the long poll, which every wait keeps running beside this.
 */
import type { ClosedRun, PlainPayload } from '../contracts/closed-run.ts';

export interface RunWait {
  /** Resolves with the run's result once a worker of this process tells its close; never rejects. */
  result: Promise<PlainPayload>;
  /** The wait ended another way: forget it. */
  stop(): void;
}

export class ClosedRuns {
  private readonly waiting = new Map<string, Set<(result: PlainPayload) => void>>();

  /** The workers' listener (WorkerSet.onRunClosed, WorkerThread.onRunClosed). */
  readonly deliver = (run: ClosedRun): void => {
    const waiters = this.waiting.get(run.runId);
    if (!waiters) return;
    this.waiting.delete(run.runId);
    for (const resolve of waiters) resolve(run.result);
  };

  waitFor(runId: string): RunWait {
    let resolve!: (result: PlainPayload) => void;
    const result = new Promise<PlainPayload>((r) => (resolve = r));
    const waiters = this.waiting.get(runId) ?? new Set();
    waiters.add(resolve);
    this.waiting.set(runId, waiters);
    return {
      result,
      stop: () => {
        waiters.delete(resolve);
        if (waiters.size === 0 && this.waiting.get(runId) === waiters) this.waiting.delete(runId);
      },
    };
  }

  /** Runs waited on now (tests: nothing is left behind). */
  get size(): number {
    return this.waiting.size;
  }
}
