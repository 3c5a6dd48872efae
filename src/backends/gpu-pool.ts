/**
 * The ComfyUIs one worker process runs prompts on, handed out late: a prompt attempt takes whichever of them
 * is free when Temporal gives the worker the task, so no GPU idles while work waits.
 *
 * Two halves:
 * - `slotSupplier()`: the activity slots of the worker polling the shared GPU queue. The worker holds at most
 *   one permit per HEALTHY backend, so it asks Temporal for another prompt only when it has a usable ComfyUI
 *   for it; a backend marked unhealthy (backends/health.ts) takes no new work from the queue, which
 *   other workers keep serving, and a worker whose backends are all unhealthy stops polling.
 * - `acquire()`: the backend a started attempt runs on. Among the free ones it prefers a healthy backend that
 *   last ran the same model (ComfyUI keeps it loaded), then a healthy one, and never waits for affinity.
 *
 * Legacy per-backend queues (renders started before the shared queue) acquire one named backend and wait
 * for it while it is busy.
 */
import { backendBusy, trackBackend } from '../metrics/backend-metrics.ts';
import type { CustomSlotSupplier, SlotPermit } from '@temporalio/worker';
import type { Backend } from '../render/types.ts';

export interface HealthView {
  get(backend: Pick<Backend, 'id' | 'url'>): unknown;
}

export interface Lease {
  backend: Backend;
  /** The backend ran (or at least loaded) `model`; free it for the next attempt. Idempotent. */
  release(model?: string): void;
}

/** While a reservation waits, health marks (files another component may clear) are looked at this often. */
const HEALTH_RECHECK_MS = 1_000;

export class GpuPool {
  private readonly free: Set<string>;
  private readonly lastModel = new Map<string, string>();
  private permits = 0;
  private waiters = new Set<() => void>();

  constructor(
    readonly backends: readonly Backend[],
    private readonly health: HealthView,
  ) {
    this.free = new Set(backends.map((b) => b.id));
    for (const b of backends) trackBackend(b.id);
  }

  /** Backends this pool may hand out now: healthy ones. */
  private healthyCount(): number {
    return this.backends.filter((b) => !this.health.get(b)).length;
  }

  /** Whether an attempt holds a backend now (a prompt runs or is about to). */
  busy(): boolean {
    return this.free.size < this.backends.length;
  }

  /** Health changed (a lease was granted): look again now rather than at the next recheck. */
  recheck(): void {
    this.wake();
  }

  private wake(): void {
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }

  private wait(signal?: AbortSignal, timeoutMs?: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.waiters.delete(done);
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.waiters.delete(done);
        if (timer) clearTimeout(timer);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the abort reason is passed on as given (as fetch does): the caller sees its own cancellation
        reject(signal?.reason ?? new Error('aborted'));
      };
      const timer = timeoutMs !== undefined ? setTimeout(done, timeoutMs) : undefined;
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(done);
    });
  }

  /** Activity slots for the shared GPU queue: one per healthy backend. */
  slotSupplier(): CustomSlotSupplier<never> {
    return {
      type: 'custom',
      reserveSlot: async (_ctx, signal): Promise<SlotPermit> => {
        while (this.permits >= this.healthyCount()) await this.wait(signal, HEALTH_RECHECK_MS);
        this.permits++;
        return {};
      },
      tryReserveSlot: (): SlotPermit | null => {
        if (this.permits >= this.healthyCount()) return null;
        this.permits++;
        return {};
      },
      markSlotUsed: () => undefined,
      releaseSlot: () => {
        this.permits--;
        this.wake();
      },
    };
  }

  /** Model each backend last ran, for /health-style reporting and tests. */
  loadedModels(): Record<string, string> {
    return Object.fromEntries(this.lastModel);
  }

  /** The best free backend for one attempt of `model`; waits while every backend is busy. */
  async acquire(opts: { model?: string }, signal?: AbortSignal): Promise<Lease> {
    for (;;) {
      const pick = this.best(opts.model);
      if (pick) {
        this.free.delete(pick.id);
        backendBusy(pick.id, true);
        let released = false;
        return {
          backend: pick,
          release: (model) => {
            if (released) return;
            released = true;
            if (model) this.lastModel.set(pick.id, model);
            this.free.add(pick.id);
            backendBusy(pick.id, false);
            this.wake();
          },
        };
      }
      await this.wait(signal);
    }
  }

  private best(model: string | undefined): Backend | undefined {
    const free = this.backends.filter((b) => this.free.has(b.id));
    const healthy = free.filter((b) => !this.health.get(b));
    // Same model first (no load), then a backend that has loaded nothing yet, then any healthy one; an
    // unhealthy one last (its attempt then fails at once saying why, and the next one runs elsewhere).
    return (
      healthy.find((b) => model !== undefined && this.lastModel.get(b.id) === model) ?? healthy.find((b) => !this.lastModel.has(b.id)) ?? healthy[0] ?? free[0]
    );
  }
}
