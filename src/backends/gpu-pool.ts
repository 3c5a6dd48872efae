/**
 * The ComfyUIs one worker process runs prompts on, handed out late: a prompt attempt takes whichever of them
 * is free when Temporal gives the worker the task, so no GPU idles while work waits.
 *
 * Two halves:
 * - `slotSupplier()`: the activity slots of the worker polling the shared GPU queue. The worker holds at most
 *   one permit per HEALTHY backend, so it asks Temporal for another prompt only when it has a usable ComfyUI
 *   for it; a backend marked unhealthy (backends/health.ts) takes no new work from the queue, which
 *   other workers keep serving, and a worker whose backends are all unhealthy stops polling. A backend still
 *   running the prompt of an attempt that ended without it (timed out on the server) counts as busy: no
 *   permit, no new prompt, until that prompt has left its queue (`Lease.releaseWhen`).
 * - `acquire()`: the backend a started attempt runs on. Among the free ones it prefers a healthy backend that
 *   last ran the same model (ComfyUI keeps it loaded), then a healthy one, and never waits for affinity.
 *
 * Fewer model swaps (`lookahead`, GPU_DISPATCH_LOOKAHEAD): the worker may take that many attempts more than it
 * has backends from the shared queue; they wait here, and a backend that frees up takes the most urgent one for
 * the model it last ran (ComfyUI keeps it loaded), none passed over longer than `maxPassOverMs`
 * (dispatch-order.ts). Temporal alone hands attempts out first in, first out, loading a model per change.
 * Attempts waiting here while the worker stops, or while none of its backends is healthy, are handed back
 * undispatched (NotDispatchedError): the workflow sends them again without counting an attempt.
 *
 * Legacy per-backend queues (renders started before the shared queue) acquire one named backend and wait
 * for it while it is busy.
 */
import { backendBusy, trackBackend } from '../metrics/backend-metrics.ts';
import type { CustomSlotSupplier, SlotPermit } from '@temporalio/worker';
import type { Backend } from '../contracts/render.ts';
import { nextAttempt, type QueuedAttempt } from './dispatch-order.ts';

export interface HealthView {
  get(backend: Pick<Backend, 'id' | 'url'>): unknown;
}

export interface Lease {
  backend: Backend;
  /** The backend ran (or at least loaded) `model`; free it for the next attempt. Idempotent. */
  release(model?: string): void;
  /**
   * The attempt ended but left its prompt in this ComfyUI's queue (for the next attempt to re-attach): the
   * backend stays busy, taking no new attempt and no slot of the shared queue, until `gone` settles.
   */
  releaseWhen(gone: Promise<unknown>, model?: string): void;
}

/** While a reservation waits, health marks (files another component may clear) are looked at this often. */
const HEALTH_RECHECK_MS = 1_000;

export interface DispatchOptions {
  /** Attempts taken from the shared queue beyond one per healthy backend, to choose among here (0: none). */
  lookahead: number;
  /** How long a waiting attempt may be passed over for one of the loaded model (ms; 0: first in, first out). */
  maxPassOverMs: number;
  /**
   * No backend may start work now but will again soon (behind llama-swap: the GPU lease is not held). Waiting
   * attempts stay; without it, backends marked unhealthy hand waiting attempts back to the shared queue.
   */
  paused?: () => boolean;
  now?: () => number;
}

/** An attempt that waited in this worker and never got a backend: no prompt was sent, nothing to count. */
export class NotDispatchedError extends Error {
  override name = 'NotDispatched';
}

interface Waiter extends QueuedAttempt {
  grant(backend: Backend): void;
  fail(err: Error): void;
}

export class GpuPool {
  private readonly free: Set<string>;
  /** Backends still running a prompt whose attempt has ended (its activity slot is back with the worker). */
  private readonly occupied = new Set<string>();
  private readonly lastModel = new Map<string, string>();
  private permits = 0;
  private waiters = new Set<() => void>();
  private readonly queue: Waiter[] = [];
  private seq = 0;
  private recheckTimer?: NodeJS.Timeout;
  private handedBack?: string;
  private readonly dispatch: Required<Omit<DispatchOptions, 'paused'>> & Pick<DispatchOptions, 'paused'>;

  constructor(
    readonly backends: readonly Backend[],
    private readonly health: HealthView,
    dispatch: Partial<DispatchOptions> = {},
  ) {
    this.free = new Set(backends.map((b) => b.id));
    for (const b of backends) trackBackend(b.id);
    this.dispatch = { lookahead: dispatch.lookahead ?? 0, maxPassOverMs: dispatch.maxPassOverMs ?? 0, now: dispatch.now ?? Date.now, paused: dispatch.paused };
  }

  /** Backends this pool may hand out now: healthy ones. */
  private healthyCount(): number {
    return this.backends.filter((b) => !this.health.get(b)).length;
  }

  /** Whether an attempt holds a backend now (a prompt runs or is about to). */
  busy(): boolean {
    return this.free.size < this.backends.length;
  }

  /** Attempts waiting in this worker for a backend. */
  queued(): number {
    return this.queue.length;
  }

  /**
   * The worker is stopping: attempts waiting here go back to the shared queue now (NotDispatchedError), not
   * after the drain's grace, and any that arrives later too. Running ones keep their backends.
   */
  handBack(why: string): void {
    this.handedBack = why;
    for (const w of this.queue.splice(0)) w.fail(new NotDispatchedError(why));
    this.dequeueTimerStop();
  }

  private dequeueTimerStop(): void {
    if (this.recheckTimer) clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
  }

  /** Health changed (a lease was granted): look again now rather than at the next recheck. */
  recheck(): void {
    this.wake();
    this.dispatchWaiting();
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

  /**
   * Permits for the shared GPU queue now: one per healthy backend, plus the lookahead while any is healthy. A
   * backend still running a prompt of an ended attempt holds no permit of its own, so it is counted out.
   */
  private permitLimit(): number {
    const healthy = this.healthyCount();
    const occupied = this.backends.filter((b) => this.occupied.has(b.id) && !this.health.get(b)).length;
    return healthy > 0 ? healthy - occupied + this.dispatch.lookahead : 0;
  }

  /** Activity slots for the shared GPU queue: one per healthy backend (plus the lookahead). */
  slotSupplier(): CustomSlotSupplier<never> {
    return {
      type: 'custom',
      reserveSlot: async (_ctx, signal): Promise<SlotPermit> => {
        while (this.permits >= this.permitLimit()) await this.wait(signal, HEALTH_RECHECK_MS);
        this.permits++;
        return {};
      },
      tryReserveSlot: (): SlotPermit | null => {
        if (this.permits >= this.permitLimit()) return null;
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

  /** Model each backend last ran: what ComfyUI keeps loaded (for /health-style reporting and the dispatch). */
  loadedModels(): Record<string, string> {
    return Object.fromEntries(this.lastModel);
  }

  /**
   * The backend for one attempt of `model`: at once when one is free and nothing waits, else when the dispatch
   * order picks it. Rejects with the signal's reason when aborted, or NotDispatchedError when handed back.
   */
  acquire(opts: { model?: string; priority?: number }, signal?: AbortSignal): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const onAbort = (): void => {
        this.dequeue(waiter);
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the abort reason is passed on as given (as fetch does)
        reject(signal?.reason ?? new Error('aborted'));
      };
      const waiter: Waiter = {
        seq: this.seq++,
        priority: opts.priority ?? 0,
        ...(opts.model !== undefined ? { model: opts.model } : {}),
        queuedAt: this.dispatch.now(),
        grant: (backend) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.lease(backend));
        },
        fail: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      if (signal?.aborted) return onAbort();
      if (this.handedBack !== undefined) return reject(new NotDispatchedError(this.handedBack));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.dispatchWaiting();
    });
  }

  private dequeue(w: Waiter): void {
    const i = this.queue.indexOf(w);
    if (i >= 0) this.queue.splice(i, 1);
    if (this.queue.length === 0) this.dequeueTimerStop();
  }

  private lease(backend: Backend): Lease {
    this.free.delete(backend.id);
    backendBusy(backend.id, true);
    let released = false;
    const release = (model?: string): void => {
      if (released) return;
      released = true;
      this.occupied.delete(backend.id);
      if (model) this.lastModel.set(backend.id, model);
      this.free.add(backend.id);
      backendBusy(backend.id, false);
      this.wake();
      this.dispatchWaiting();
    };
    return {
      backend,
      release,
      releaseWhen: (gone, model) => {
        if (released) return;
        this.occupied.add(backend.id);
        void gone.finally(() => release(model)).catch(() => undefined);
      },
    };
  }

  /** Hand free backends to waiting attempts, in the dispatch order. */
  private dispatchWaiting(): void {
    if (this.dispatch.paused?.()) return this.recheckLater();
    while (this.queue.length > 0) {
      const free = this.backends.filter((b) => this.free.has(b.id));
      const healthyFree = free.filter((b) => !this.health.get(b));
      if (healthyFree.length === 0) {
        if (free.length > 0 && this.healthyCount() === 0) this.noHealthyBackend(free[0]!);
        return this.recheckLater();
      }
      // A backend whose loaded model someone waits for, else one with nothing loaded, else any.
      const wanted = new Set(this.queue.map((w) => w.model));
      const backend =
        healthyFree.find((b) => this.lastModel.has(b.id) && wanted.has(this.lastModel.get(b.id))) ??
        healthyFree.find((b) => !this.lastModel.has(b.id)) ??
        healthyFree[0]!;
      const pick = nextAttempt(this.queue, this.lastModel.get(backend.id), this.dispatch.now(), this.dispatch)!;
      const better = healthyFree.find((b) => pick.model !== undefined && this.lastModel.get(b.id) === pick.model);
      this.dequeue(pick);
      pick.grant(better ?? backend);
    }
  }

  /**
   * Every backend is marked unhealthy: the first waiting attempt gets one and fails at once saying why (as
   * without a lookahead); the others go back to the shared queue, where another worker's ComfyUI may take them.
   */
  private noHealthyBackend(backend: Backend): void {
    const first = nextAttempt(this.queue, undefined, this.dispatch.now(), { maxPassOverMs: 0 })!;
    this.dequeue(first);
    first.grant(backend);
    for (const w of this.queue.splice(0)) w.fail(new NotDispatchedError(`no healthy ComfyUI in this worker (${this.backends.map((b) => b.id).join(', ')})`));
  }

  /** Health marks are files another component may clear: while attempts wait, look again now and then. */
  private recheckLater(): void {
    if (this.recheckTimer || this.queue.length === 0) return;
    this.recheckTimer = setTimeout(() => {
      this.recheckTimer = undefined;
      this.dispatchWaiting();
    }, HEALTH_RECHECK_MS);
    this.recheckTimer.unref();
  }
}
