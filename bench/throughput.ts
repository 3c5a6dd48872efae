/**
 * 3. Throughput: several fake ComfyUIs (zero render time, in one child process) as the COMFYUI_URL list,
 * closed-loop concurrent clients, completed renders per second over a fixed window after a warm-up.
 * On the 2-core machine front, worker, Temporal, the fakes and these clients all share the CPU.
 */
import os from 'node:os';
import type { BenchContext } from './lib/context.ts';
import { startFloor } from './lib/floor.ts';
import { BEFORE } from './lib/report.ts';
import { cpuMs, processTreeCpuMs, rssBytes } from './lib/proc.ts';
import { dist, fmtDist, log, mb, sleep, type BenchResult } from './lib/report.ts';
import { postJson, startBenchService, startFakeHost } from './lib/stack.ts';
import { txt2imgBody } from './overhead.ts';

export const BUDGET_RPS = 25;

const BACKENDS = 4;

/** The fakes (one child process) and a service with all of them as backends. */
export function prepareThroughput(ctx: BenchContext): Promise<{ host: Awaited<ReturnType<typeof startFakeHost>>; svc: Awaited<ReturnType<typeof startBenchService>> }> {
  return ctx.lazy('throughput', async () => {
    const { temporal } = await ctx.temporal();
    const host = await startFakeHost(ctx.cleanups, BACKENDS);
    const svc = await startBenchService(ctx.cleanups, { temporalAddress: temporal.address, comfyUrl: host.urls.join(',') });
    return { host, svc };
  });
}

export async function benchThroughput(ctx: BenchContext): Promise<BenchResult> {
  const backends = BACKENDS;
  const concurrency = backends * 3;
  const warmMs = ctx.smoke ? 500 : ctx.quick ? 1_500 : 2_000;
  const windowMs = ctx.smoke ? 1_500 : ctx.quick ? 4_000 : 10_000;
  const { temporal, client: temporalClient } = await ctx.temporal();
  const { host, svc } = await prepareThroughput(ctx);

  // One warm render per backend path (object_info caches, connections, JIT).
  await Promise.all(Array.from({ length: backends }, (_, i) => postJson(`${svc.url}/sdapi/v1/txt2img`, JSON.stringify(txt2imgBody(`tp warm ${i}`, 800_000 + i)), AbortSignal.timeout(60_000))));

  const t0 = Date.now();
  const windowStart = t0 + warmMs;
  const windowEnd = windowStart + windowMs;
  const hardStop = Math.min(ctx.deadline, windowEnd + 30_000);
  const done: Array<{ at: number; ms: number; ok: boolean }> = [];
  let seq = 0;
  let cpuStart: Record<string, number> | undefined;
  const cpuNow = (): Record<string, number> => ({
    service: cpuMs(svc.nodePid),
    temporal: processTreeCpuMs(temporal.process.pid!),
    fakes: processTreeCpuMs(host.child.pid!),
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
  });
  let cpuEnd: Record<string, number> | undefined;
  const marker = (async () => {
    await sleep(Math.max(0, windowStart - Date.now()));
    cpuStart = cpuNow();
    await sleep(Math.max(0, windowEnd - Date.now()));
    cpuEnd = cpuNow();
  })();
  let peakRss = 0;
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, rssBytes(svc.nodePid))), 200);

  const client = async (c: number): Promise<void> => {
    while (Date.now() < windowEnd && Date.now() < hardStop) {
      const i = seq++;
      try {
        const r = await postJson(`${svc.url}/sdapi/v1/txt2img`, JSON.stringify(txt2imgBody(`tp ${c}/${i}`, 400_000 + i)), AbortSignal.timeout(30_000));
        done.push({ at: r.doneAt, ms: r.doneAt - r.sentAt, ok: r.status === 200 });
      } catch {
        done.push({ at: Date.now(), ms: NaN, ok: false });
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, c) => client(c)));
  await marker;
  clearInterval(rssTimer);

  const inWindow = done.filter((d) => d.at >= windowStart && d.at < windowEnd);
  const ok = inWindow.filter((d) => d.ok);
  const rps = ok.length / (windowMs / 1000);
  const failed = done.filter((d) => !d.ok).length;
  log(`throughput: ${rps.toFixed(1)} renders/s`);

  const perBackend: string[] = [];
  for (const u of host.urls) {
    const st = (await (await fetch(`${u}/__fake/stats`)).json()) as { executions: Record<string, number> };
    perBackend.push(String(Object.keys(st.executions).length));
  }
  const windowS = windowMs / 1000;
  // Same run, same server: the ceiling Temporal alone allows for this workflow shape (no-op activities,
  // renders spread evenly over ${backends} single-slot queues, same concurrency). Full runs only.
  let ceiling: number | undefined;
  let legacyCeiling: number | undefined;
  if (!ctx.quick && Date.now() + windowMs + 15_000 < ctx.deadline) {
    const floor = await startFloor(ctx.cleanups, temporal.address, temporalClient, backends, 'late-bound');
    await floor.rate(concurrency, 1_500);
    ceiling = await floor.rate(concurrency, windowMs);
    log(`throughput: temporal ceiling ${ceiling.toFixed(1)} floor renders/s`);
  }
  if (!ctx.quick && Date.now() + windowMs + 15_000 < ctx.deadline) {
    const legacy = await startFloor(ctx.cleanups, temporal.address, temporalClient, backends, 'legacy');
    await legacy.rate(concurrency, 1_500);
    legacyCeiling = await legacy.rate(concurrency, windowMs);
    log(`throughput: temporal ceiling of the former shape ${legacyCeiling.toFixed(1)} floor renders/s`);
  }
  const cpu = (k: string): string => (cpuStart && cpuEnd ? `${((cpuEnd[k]! - cpuStart[k]!) / 1000 / windowS).toFixed(2)}` : 'n/a');
  return {
    name: 'throughput',
    title: `Throughput: ${backends} fake ComfyUIs, ${concurrency} concurrent clients, ${windowS} s window`,
    figure: `${rps.toFixed(1)} renders/s (${ok.length} in ${windowS} s)`,
    budget: `≥ ${BUDGET_RPS} renders/s`,
    verdict: rps >= BUDGET_RPS && failed === 0 ? 'PASS' : 'OVER',
    before: BEFORE.throughput,
    lines: [
      `latency per render under load: ${fmtDist(dist(ok.map((d) => d.ms)))}`,
      `failed requests: ${failed}   prompts run per backend (whole run): ${perBackend.join(' / ')}`,
      ceiling !== undefined
        ? `temporal ceiling, same run: ${ceiling.toFixed(1)} no-op renders/s (late-bound shape as start mode runs it: one activity on one GPU queue with ${backends} single-slot workers, same concurrency) → stack reaches ${((100 * rps) / ceiling).toFixed(0)}% of it`
        : 'temporal ceiling: skipped (--quick or out of time)',
      legacyCeiling !== undefined
        ? `temporal ceiling of the former shape (4 activities, per-backend queues), same run: ${legacyCeiling.toFixed(1)} no-op renders/s`
        : 'temporal ceiling of the former shape: skipped (--quick or out of time)',
      `service (front+worker) peak RSS under load: ${mb(peakRss)}`,
      `CPU cores used during the window (machine has ${os.cpus().length}):`,
      `  service ${cpu('service')}  temporal ${cpu('temporal')}  fakes ${cpu('fakes')}  bench clients ${cpu('bench')}`,
      'note: front, worker, Temporal dev server (SQLite), the fakes and the clients share the same cores;',
      '      a real deployment moves ComfyUI (the fakes) and the clients off this machine.',
    ],
  };
}
