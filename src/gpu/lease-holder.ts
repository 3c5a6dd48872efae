/**
 * The front's half of sharing one GPU with a model-swapping proxy (llama-swap). The proxy gives the GPU to one
 * group at a time and never evicts an entry while it proxies a request to it. So while renders wait or run —
 * counted in Temporal, which sees every front's renders, sync and async, through the proxy or not — the front
 * holds one long request open to the GPU entry through the proxy (GPU_LEASE_URL, `/upstream/<entry>/gpu/lease`):
 *
 * - the proxy starts the GPU entry for it when another group has the GPU (after that group's requests end), so
 *   pending work brings the GPU back by itself, with no client request;
 * - while it is open the proxy counts the entry busy and queues other groups' requests behind it;
 * - once nothing waits or runs, it is released and the proxy may hand the GPU on (stopping the entry frees VRAM).
 *
 * Status polls and every other route never touch the lease: only the count of running renders does.
 */
import http from 'node:http';
import https from 'node:https';
import type { Logger } from '../log.ts';
import { LEASE_TOKEN_HEADER } from './lease-server.ts';

export interface LeaseHolderOptions {
  url: string;
  /** Renders waiting or running now (Temporal's count for the render task queue). */
  pending(): Promise<number>;
  /** How often the count is read. */
  pollMs: number;
  /** `Authorization` for the proxy, when it wants an API key. */
  authorization?: string;
  /** GPU_LEASE_TOKEN, which the GPU entry asks of every lease. */
  token: string;
  /**
   * Whether any backend could run a prompt now (ComfyUI answers and is not marked wedged). While none can, no
   * lease is held whatever waits: it would keep the GPU from the other groups for the whole outage, for nothing.
   */
  usable?: () => Promise<boolean>;
  logger: Logger;
}

/** A render about to start holds the lease this long even before Temporal's count (which may lag) shows it. */
const POKE_HOLD_MS = 5_000;
/** Backoff after a lease that failed or ended while still wanted (proxy restarting the entry, refusing, down). */
const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 10_000;

export class GpuLeaseHolder {
  private timer?: NodeJS.Timeout;
  private request?: http.ClientRequest;
  private established = false;
  private wanted = false;
  private pokedUntil = 0;
  private retryAt = 0;
  private failures = 0;
  private ticking = false;
  private stopped = false;
  private waiters = new Set<() => void>();
  /** The last answer of `usable` (true until asked). */
  private canRun = true;

  constructor(private readonly opts: LeaseHolderOptions) {}

  start(): void {
    this.stopped = false;
    void this.tick();
  }

  /** True while the proxy has granted the lease (its answer's headers arrived). */
  held(): boolean {
    return this.established;
  }

  /**
   * A render is about to start: take the lease now, not at the next count, and wait up to `waitMs` for the
   * proxy to grant it. An async route that waits here answers 202 only once the proxy counts the GPU entry
   * busy (or is starting it for us), so a request for another group sent right after queues behind the render.
   */
  async poke(waitMs: number): Promise<void> {
    if (this.stopped) return;
    // No lease for a render no ComfyUI can run now (down, wedged): it waits in Temporal, the GPU stays with others.
    if (this.opts.usable) this.canRun = await this.opts.usable().catch(() => false);
    if (!this.canRun) return;
    this.pokedUntil = Date.now() + POKE_HOLD_MS;
    this.wanted = true;
    if (this.established) return;
    this.retryAt = 0;
    this.ensureOpen();
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      this.waiters.add(done);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.release();
    for (const w of [...this.waiters]) w();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return;
    this.ticking = true;
    try {
      let count: number | undefined;
      try {
        count = await this.opts.pending();
      } catch (err) {
        // Temporal unreachable: keep whatever we hold (a render may be running) and look again.
        this.opts.logger.warn({ err: (err as Error).message }, 'GPU lease: could not count pending renders');
      }
      if (count !== undefined) this.wanted = count > 0 || Date.now() < this.pokedUntil;
      if (this.wanted && this.opts.usable) {
        const could = this.canRun;
        this.canRun = await this.opts.usable().catch(() => false);
        if (could !== this.canRun) {
          this.opts.logger.warn(
            { usable: this.canRun },
            this.canRun ? 'GPU lease: ComfyUI can run prompts again' : 'GPU lease: no ComfyUI can run a prompt; the GPU is left to the other groups meanwhile',
          );
        }
        if (!this.canRun) this.wanted = false;
      }
      if (this.wanted) this.ensureOpen();
      else this.release();
    } finally {
      this.ticking = false;
      this.schedule(this.opts.pollMs);
    }
  }

  private ensureOpen(): void {
    if (this.request || this.stopped || Date.now() < this.retryAt) return;
    const url = new URL(this.opts.url);
    const lib = url.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.opts.authorization) headers.authorization = this.opts.authorization;
    headers[LEASE_TOKEN_HEADER] = this.opts.token;
    const req = lib.request(url, { method: 'GET', headers });
    this.request = req;
    const opened = Date.now();
    this.opts.logger.info({ url: this.opts.url }, 'GPU lease: asking the proxy for the GPU');
    const ended = (why: string): void => {
      if (this.request !== req) return;
      this.request = undefined;
      const was = this.established;
      this.established = false;
      if (this.wanted && !this.stopped) {
        // Ended while still wanted: the entry was unloaded or the proxy refused. Ask again, backing off
        // while it keeps failing fast (a misconfigured URL must not become a busy loop).
        this.failures = Date.now() - opened > 30_000 ? 0 : this.failures + 1;
        const wait = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.max(0, this.failures - 1));
        this.retryAt = Date.now() + wait;
        this.opts.logger.warn({ why, held: was, retryInMs: wait }, 'GPU lease ended while renders are pending; asking again');
        this.schedule(wait);
      } else {
        this.opts.logger.info({ why }, 'GPU lease released');
      }
    };
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        if (res.statusCode === 401) {
          this.opts.logger.error('GPU lease refused (401): GPU_LEASE_TOKEN differs between this front and the GPU entry; renders wait until they match');
        }
        ended(`the proxy answered ${res.statusCode}`);
        req.destroy();
        return;
      }
      this.established = true;
      this.failures = 0;
      this.opts.logger.info({ waitedMs: Date.now() - opened }, 'GPU lease held');
      for (const w of [...this.waiters]) w();
      let yielded = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        // The GPU entry ended a slice: ask again at once, behind whatever request for another group is queued.
        if (chunk.includes('event: yield')) yielded = true;
      });
      res.on('end', () => {
        if (yielded && this.request === req) {
          this.request = undefined;
          this.established = false;
          this.opts.logger.info('GPU lease: slice over, asking again');
          if (this.wanted) this.ensureOpen();
        }
      });
      res.on('end', () => ended('the GPU entry ended the lease'));
      res.on('error', (err) => ended(err.message));
      res.on('close', () => ended('lease connection closed'));
    });
    req.on('error', (err) => ended(err.message));
    req.on('close', () => ended('lease connection closed'));
    req.end();
  }

  private release(): void {
    const req = this.request;
    if (!req) return;
    this.request = undefined;
    this.established = false;
    this.opts.logger.info('GPU lease: no render waiting or running, releasing the GPU');
    req.destroy();
  }
}
