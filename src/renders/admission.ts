/**
 * Admission control: a bound on renders waiting or running (MAX_WAITING_RENDERS). Past it the front answers
 * 503 with Retry-After and starts nothing, instead of piling up work no GPU will reach for hours.
 *
 * The count is Temporal's (running render workflows on this task queue, from every front, async and replays
 * included), read at most once a second; starts this front made since the last read are added, since
 * visibility may lag behind a start.
 */
export class AdmissionRefusedError extends Error {
  override name = 'AdmissionRefusedError';
  constructor(
    readonly waiting: number,
    readonly limit: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`${waiting} renders are waiting or running, the limit is ${limit} (MAX_WAITING_RENDERS); retry in ${retryAfterSeconds} s`);
  }
}

export interface AdmissionOptions {
  limit: number;
  retryAfterSeconds: number;
  /** Renders waiting or running now. */
  count(): Promise<number>;
  /** How long one count is reused. */
  cacheMs?: number;
  onCountError?(err: unknown): void;
}

export class Admission {
  private counted?: { at: number; value: number };
  private startedSinceCount = 0;

  constructor(private readonly opts: AdmissionOptions) {}

  /** Throws AdmissionRefusedError when the bound is reached; otherwise reserves one place. */
  async admit(): Promise<void> {
    const waiting = await this.waiting();
    if (waiting >= this.opts.limit) throw new AdmissionRefusedError(waiting, this.opts.limit, this.opts.retryAfterSeconds);
    this.startedSinceCount++;
  }

  private async waiting(): Promise<number> {
    const now = Date.now();
    if (!this.counted || now - this.counted.at >= (this.opts.cacheMs ?? 1_000)) {
      try {
        this.counted = { at: now, value: await this.opts.count() };
        this.startedSinceCount = 0;
      } catch (err) {
        // Temporal unreachable: the start will fail (or wait) on its own; admission must not be the cause.
        this.opts.onCountError?.(err);
        return 0;
      }
    }
    return this.counted.value + this.startedSinceCount;
  }
}

/** The visibility query for renders waiting or running on a task queue. */
export function waitingRendersQuery(taskQueue: string): string {
  return `WorkflowType = 'render' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/'/g, '')}'`;
}
