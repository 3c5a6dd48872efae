/**
 * The fuzzer's budgets, watched from outside the service: its own event-loop delay (prom-client's
 * monitorEventLoopDelay histogram behind `/metrics`, whose max resets at every scrape) and its resident
 * memory (/proc). A sampler scrapes both on a short period; the worst window is what counts.
 */
import { readFileSync } from 'node:fs';

export interface BudgetSample {
  lagMs: number;
  rssBytes: number;
}

/**
 * CPU time of the service's main thread (the event loop's) so far, in ms: utime + stime of /proc/PID/task/PID
 * in clock ticks of 10 ms. A window whose loop was late by more than its main thread ran was late because the
 * machine did not run it (other processes on the same cores), not because of the service's own work.
 */
export function mainThreadCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/**
 * prom-client samples the loop with monitorEventLoopDelay at a 10 ms resolution, and each sample is the whole
 * interval between two ticks: an idle loop reads ~10 ms. The stall is what exceeds that interval.
 */
const SAMPLING_INTERVAL_MS = 10;

/** The longest event-loop stall since the last scrape (the service's histogram resets at each). */
export async function scrapeLagMs(baseUrl: string, headers: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`, { headers })).text();
  const m = /^nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})? ([0-9.e+-]+)$/m.exec(text);
  return m ? Math.max(0, Number(m[1]) * 1000 - SAMPLING_INTERVAL_MS) : 0;
}

export class BudgetWatch {
  /** The longest loop delay seen, whatever its cause. */
  maxLagMs = 0;
  /** The longest of the service's own stalls: a window's loop delay, at most what its main thread ran. */
  maxStallMs = 0;
  maxRssGrowth = 0;
  /** Windows whose stall went over the budget, with what was in flight then. */
  readonly stalls: string[] = [];
  /** The steps by which resident memory grew (over 10 MB at once), with what was in flight then. */
  readonly growth: string[] = [];
  private baselineRss = 0;
  private lastCpuMs = 0;
  private timer?: NodeJS.Timeout;
  private scraping?: Promise<void>;

  constructor(
    private readonly baseUrl: string,
    private readonly pid: number,
    private readonly stallBudgetMs: number,
    private readonly inFlight: () => string[],
    /** Sent with each scrape (an operator key on a service with API_KEYS). */
    private readonly headers: Record<string, string> = {},
  ) {}

  /**
   * Resets the service's lag histogram and takes the memory baseline; sampling starts now. A window is at least
   * `periodMs` long and stretches with a stall (the scrape waits for the service's loop), so its main-thread CPU
   * can exceed the budget only when the service itself ran that long.
   */
  async start(periodMs = 100): Promise<void> {
    await scrapeLagMs(this.baseUrl, this.headers);
    this.baselineRss = rssOf(this.pid);
    this.lastCpuMs = mainThreadCpuMs(this.pid);
    this.timer = setInterval(() => {
      if (this.scraping) return;
      const during = this.inFlight();
      this.scraping = this.sample(during).finally(() => (this.scraping = undefined));
    }, periodMs);
  }

  private async sample(during: string[]): Promise<void> {
    let lag: number;
    try {
      lag = await scrapeLagMs(this.baseUrl, this.headers);
    } catch {
      return;
    }
    const rss = rssOf(this.pid);
    const cpu = mainThreadCpuMs(this.pid);
    // One clock tick of slack: CPU time is counted in 10 ms ticks.
    const stall = Math.min(lag, cpu - this.lastCpuMs + 10);
    this.lastCpuMs = cpu;
    this.maxStallMs = Math.max(this.maxStallMs, stall);
    this.maxLagMs = Math.max(this.maxLagMs, lag);
    if (rss - this.baselineRss > this.maxRssGrowth + 10 * 1024 * 1024) {
      this.growth.push(
        `+${Math.round((rss - this.baselineRss) / 1024 / 1024)} MB while in flight: ${[...new Set([...during, ...this.inFlight()])].join(' | ')}`,
      );
    }
    this.maxRssGrowth = Math.max(this.maxRssGrowth, rss - this.baselineRss);
    if (stall > this.stallBudgetMs)
      this.stalls.push(
        `${Math.round(stall)} ms stall (loop ${Math.round(lag)} ms late) while in flight: ${[...new Set([...during, ...this.inFlight()])].join(' | ')}`,
      );
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.scraping;
    await this.sample(this.inFlight());
  }
}
