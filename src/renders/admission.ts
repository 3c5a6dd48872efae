/**
 * Admission control: a bound on renders waiting or running (MAX_WAITING_RENDERS), and on each client's share
 * of it (MAX_WAITING_RENDERS_PER_CLIENT). Past the bound the front answers 503 with Retry-After and starts
 * nothing, instead of piling up work no GPU will reach for hours; past its share a client is answered 429
 * with Retry-After, so that one client (a key, else a remote address) cannot fill the bound and leave the
 * others nothing but 503s.
 *
 * The counts are Temporal's (running render workflows on this task queue, from every front, async and replays
 * included; a client's by the RenderClient search attribute), each read at most once a second; starts this
 * front made since the last read are added, since visibility may lag behind a start.
 */
export class AdmissionRefusedError extends Error {
  override name = 'AdmissionRefusedError';
  constructor(
    readonly waiting: number,
    readonly limit: number,
    readonly retryAfterSeconds: number,
    /** 503 when the whole bound is reached, 429 when the client's own share is. */
    readonly status: 503 | 429 = 503,
  ) {
    super(
      status === 429
        ? `this client has ${waiting} renders waiting or running, its share is ${limit} (MAX_WAITING_RENDERS_PER_CLIENT); retry in ${retryAfterSeconds} s`
        : `${waiting} renders are waiting or running, the limit is ${limit} (MAX_WAITING_RENDERS); retry in ${retryAfterSeconds} s`,
    );
  }
}

export interface AdmissionOptions {
  limit: number;
  /** The most renders one client may have waiting or running (default: the whole limit, no share). */
  perClientLimit?: number;
  retryAfterSeconds: number;
  /** Renders waiting or running now. */
  count(): Promise<number>;
  /** One client's renders waiting or running now (absent: clients are not counted apart). */
  countClient?(client: string): Promise<number>;
  /** How long one count is reused. */
  cacheMs?: number;
  onCountError?(err: unknown): void;
}

/** A count read from Temporal, plus the starts made since (visibility lags behind a start). */
class CachedCount {
  private counted?: { at: number; value: number };
  private startedSinceCount = 0;

  constructor(
    private readonly read: () => Promise<number>,
    private readonly cacheMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  async value(now = Date.now()): Promise<number> {
    if (!this.counted || now - this.counted.at >= this.cacheMs) {
      try {
        this.counted = { at: now, value: await this.read() };
        this.startedSinceCount = 0;
      } catch (err) {
        // Temporal unreachable: the start will fail (or wait) on its own; admission must not be the cause.
        this.onError(err);
        return 0;
      }
    }
    return this.counted.value + this.startedSinceCount;
  }

  started(): void {
    this.startedSinceCount++;
  }

  /** Read long enough ago that a new read replaces it anyway. */
  stale(now: number): boolean {
    return !this.counted || now - this.counted.at >= this.cacheMs;
  }
}

/** Clients whose counts are kept between reads; past it, stale ones are forgotten (a flood of addresses). */
const MAX_CLIENT_COUNTS = 4_096;

export class Admission {
  private readonly total: CachedCount;
  private readonly clients = new Map<string, CachedCount>();
  private readonly cacheMs: number;

  constructor(private readonly opts: AdmissionOptions) {
    this.cacheMs = opts.cacheMs ?? 1_000;
    this.total = new CachedCount(
      () => opts.count(),
      this.cacheMs,
      (err) => opts.onCountError?.(err),
    );
  }

  /**
   * Throws AdmissionRefusedError when the client's share (429) or the whole bound (503) is reached; otherwise
   * reserves one place in both. The share is checked first: a client over it is told so even when all is full.
   */
  async admit(client?: string): Promise<void> {
    const perClient = this.opts.perClientLimit;
    const own = client !== undefined && perClient !== undefined && perClient < this.opts.limit && this.opts.countClient ? this.clientCount(client) : undefined;
    if (own) {
      const mine = await own.value();
      if (mine >= perClient!) throw new AdmissionRefusedError(mine, perClient!, this.opts.retryAfterSeconds, 429);
    }
    const waiting = await this.total.value();
    if (waiting >= this.opts.limit) throw new AdmissionRefusedError(waiting, this.opts.limit, this.opts.retryAfterSeconds);
    this.total.started();
    own?.started();
  }

  private clientCount(client: string): CachedCount {
    let c = this.clients.get(client);
    if (!c) {
      if (this.clients.size >= MAX_CLIENT_COUNTS) this.forgetStale();
      const opts = this.opts;
      c = new CachedCount(
        () => opts.countClient!(client),
        this.cacheMs,
        (err) => this.opts.onCountError?.(err),
      );
      this.clients.set(client, c);
    }
    return c;
  }

  private forgetStale(): void {
    const now = Date.now();
    for (const [k, c] of this.clients) if (c.stale(now)) this.clients.delete(k);
  }
}
