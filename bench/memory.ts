/**
 * 4. Memory: K concurrent img2img requests, each with its own ~2 MB PNG init image, held waiting while the
 * fake renders slowly; the RSS of the service (`mode start`: every node process it runs, summed) is sampled
 * the whole time (upload, waiting, drain) and compared with the idle figure measured just before.
 */
import { randomFillSync } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import type { BenchContext } from './lib/context.ts';
import { MODEL } from './lib/context.ts';
import { fetchHistory, segmentMedians, timeline, type Mark } from './lib/history.ts';
import { hwmBytes, rssBytes, serviceNodePids, serviceRssBytes } from './lib/proc.ts';
import { dist, fmtDist, log, mb, sleep, type BenchResult, BEFORE } from './lib/report.ts';
import { ROOT, killTree, postJson, setFaults, startBenchService, startFake, tempDir } from './lib/stack.ts';

export const BUDGET_BYTES = 300 * 1024 * 1024;

/** A valid RGB PNG of random pixels, stored (deflate level 0): about width*height*3 bytes. */
export function noisePng(width: number, height: number): Buffer {
  const row = width * 3 + 1;
  const raw = Buffer.alloc(row * height);
  randomFillSync(raw);
  for (let y = 0; y < height; y++) raw[y * row] = 0; // filter type None
  const chunk = (type: string, data: Buffer): Buffer => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td) >>> 0);
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 0 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function img2imgBody(tag: string, seed: number, png: Buffer): string {
  return JSON.stringify({
    prompt: `bench ${tag}`,
    model: MODEL,
    width: 512,
    height: 512,
    seed,
    denoising_strength: 0.6,
    init_images: [png.toString('base64')],
  });
}

export interface MemoryOptions {
  /** The checkout whose build runs (default this one): `--against` runs another commit under this harness. */
  root?: string;
  /** Memoisation key of the stack (one fresh service per key). */
  key?: string;
  /** Stop the service once measured (`--against` runs several, one after the other). */
  stopAfter?: boolean;
  /** How long the clients may take (default 120 s, --quick 60 s): the CI test gives a loaded machine longer. */
  timeoutMs?: number;
}

/** What one memory run measured, for the side-by-side table of `--against`. */
export interface MemoryRun {
  peak: number;
  idle: number;
  /** Each process's own kernel peak (VmHWM), summed: an upper bound of the peak together. */
  hwm: number;
  ok: number;
  clients: number;
  result: BenchResult;
}

/** A fresh service (its own process, so the RSS is this benchmark's) logging its memoryUsage(), and a fake. */
export function prepareMemory(
  ctx: BenchContext,
  opts: MemoryOptions = {},
): Promise<{ fake: Awaited<ReturnType<typeof startFake>>; svc: Awaited<ReturnType<typeof startBenchService>>; memLog: string }> {
  return ctx.lazy(opts.key ?? 'memory', async () => {
    const { temporal } = await ctx.temporal();
    const fake = await startFake(ctx.cleanups);
    // The service logs its own process.memoryUsage() (heap vs ArrayBuffers) every 250 ms: see bench/lib/mem-log.cjs.
    const memLog = path.join(tempDir('cd-bench-memlog-'), 'mem');
    ctx.cleanups.add('mem log', async () => rmSync(path.dirname(memLog), { recursive: true, force: true }));
    const svc = await startBenchService(ctx.cleanups, {
      temporalAddress: temporal.address,
      comfyUrl: fake.url,
      env: {
        // Replaces startBenchService's NODE_OPTIONS: BENCH_SERVICE_NODE_OPTIONS (a profiler, a module probe) goes on too.
        NODE_OPTIONS: `--require ${path.join(ROOT, 'bench', 'lib', 'mem-log.cjs')} ${process.env.BENCH_SERVICE_NODE_OPTIONS ?? ''}`,
        BENCH_MEM_LOG: memLog,
      },
      ...(opts.root ? { root: opts.root } : {}),
    });
    return { fake, svc, memLog };
  });
}

export async function benchMemory(ctx: BenchContext): Promise<BenchResult> {
  return (await runMemory(ctx)).result;
}

// eslint-disable-next-line max-lines-per-function -- one benchmark read top to bottom (start, load, sample, report); its steps share the measured process and its samples
export async function runMemory(ctx: BenchContext, opts: MemoryOptions = {}): Promise<MemoryRun> {
  // --quick: fewer clients, so the figure is indicative only (the budget is stated for 100).
  const clients = ctx.smoke ? 4 : ctx.quick ? 30 : 100;
  const holdMs = ctx.quick ? 2_000 : 3_000; // per render while the clients pile up; cleared once all are waiting
  const { fake, svc, memLog } = await prepareMemory(ctx, opts);
  const { client: temporalClient } = await ctx.temporal();
  // Renders bind their GPU late (inputs reach ComfyUI only when a prompt starts there), so "every client's
  // images are in and its render waits" is counted in Temporal: renders of this service started since `since`.
  let since = new Date().toISOString();
  const startedRenders = async (): Promise<number> => {
    try {
      return Number((await temporalClient.workflow.count(`TaskQueue='${svc.taskQueue}' AND StartTime >= '${since}'`)).count);
    } catch {
      return 0;
    }
  };

  const t0 = Date.now();
  const bodies = Array.from({ length: clients + 2 }, (_, i) => img2imgBody(`mem ${i}`, 600_000 + i, noisePng(1024, 680)));
  const imageBytes = noisePng(1024, 680).length;
  log(`memory: ${bodies.length} bodies of ${mb(bodies[0]!.length)} (PNG ${mb(imageBytes)}) built in ${Date.now() - t0} ms`);

  // Warm-up with the same kind of request, then let the heap settle.
  for (let i = 0; i < 2; i++) {
    const r = await postJson(`${svc.url}/sdapi/v1/img2img`, bodies[clients + i]!, AbortSignal.timeout(60_000));
    if (r.status !== 200) throw new Error(`img2img warm-up answered ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
  }
  await sleep(1_000);
  const idle = serviceRssBytes(svc.nodePid);
  since = new Date().toISOString();

  const samples: Array<{ at: number; rss: number; phase: string }> = [];
  let phase = 'sending';
  const sampler = setInterval(() => samples.push({ at: Date.now(), rss: serviceRssBytes(svc.nodePid), phase }), 50);

  await setFaults(fake.url, { slow: { renderMs: holdMs } });
  const stopAt = Math.min(ctx.deadline, Date.now() + (opts.timeoutMs ?? (ctx.quick ? 60_000 : 120_000)));
  const results: Array<{ status: number; ms: number; error?: string; renderId?: string; sentAt?: number }> = [];
  const requests = bodies.slice(0, clients).map((b) =>
    postJson(`${svc.url}/sdapi/v1/img2img`, b, AbortSignal.timeout(Math.max(1_000, stopAt - Date.now())))
      .then((r) =>
        results.push({
          status: r.status,
          ms: r.doneAt - r.sentAt,
          renderId: r.headers.get('x-render-id') ?? '',
          sentAt: r.sentAt,
          ...(r.status === 200 ? {} : { error: r.body.toString('utf8').slice(0, 200) }),
        }),
      )
      .catch((e: Error) => results.push({ status: 0, ms: NaN, error: `${e.name}: ${e.message}` })),
  );
  // Progress of the pile-up: when 25/50/75/100 % of the inputs had reached ComfyUI.
  const progress: string[] = [];
  const marks = [0.25, 0.5, 0.75, 1];
  const sentAt = Date.now();
  let started = 0;
  const progressTimer = setInterval(() => {
    void startedRenders().then((n) => {
      started = Math.max(started, n);
      const frac = started / clients;
      while (marks.length > 0 && frac >= marks[0]!) progress.push(`${marks.shift()! * 100}% ${((Date.now() - sentAt) / 1000).toFixed(1)} s`);
    });
  }, 200);

  // Every render started = every client's images are stored and its render waits for the GPU slot.
  let allWaitingAfter = NaN;
  while (Date.now() < stopAt && started < clients && results.length < clients) await sleep(100);
  if (started >= clients) allWaitingAfter = Date.now() - sentAt;
  phase = 'waiting';
  const waitingSince = Date.now();
  await sleep(2_000);
  const completedWhileHeld = results.length;
  phase = 'draining';
  await setFaults(fake.url, { slow: null });
  await Promise.race([Promise.all(requests), sleep(Math.max(0, stopAt - Date.now()))]);
  await sleep(500);
  clearInterval(sampler);
  clearInterval(progressTimer);
  const drainedAt = Date.now();

  const peakOf = (p?: string): number => Math.max(0, ...samples.filter((s) => !p || s.phase === p).map((s) => s.rss));
  const peak = peakOf();
  // Each process's own peak, added: an upper bound of their peak together.
  const pids = serviceNodePids(svc.nodePid);
  const hwm = pids.reduce((a, p) => a + hwmBytes(p), 0);
  const wrapperRss = rssBytes(svc.child.pid!);
  const ok = results.filter((r) => r.status === 200);

  // What the RSS is made of, from the service's own log: at the RSS peak, and typical while all were waiting.
  const rows = readMemLog(`${memLog}.${svc.nodePid}`);
  const heap = rows.filter((r) => !r.thread);
  const threadRows = rows.filter((r) => r.thread);
  const atPeak = heap.reduce<MemRow | undefined>((a, r) => (!a || r.rss > a.rss ? r : a), undefined);
  const whileWaiting = heap.filter((r) => r.at >= waitingSince && r.at < waitingSince + 2_000);
  const midWait = whileWaiting[Math.floor(whileWaiting.length / 2)];
  const heapLine = (label: string, r: MemRow | undefined): string =>
    r
      ? `${label}: rss ${mb(r.rss)} = JS heap ${mb(r.heapTotal)} (used ${mb(r.heapUsed)}) + ArrayBuffers ${mb(r.arrayBuffers)} + other ${mb(r.rss - r.heapTotal - r.arrayBuffers)}`
      : `${label}: n/a`;

  // Where a render's time went while 100 piled up (first 10 to start): front ingest, Temporal, upload.
  const tls: Mark[][] = [];
  for (const r of results
    .filter((x) => x.renderId)
    .sort((a, b) => (a.sentAt ?? 0) - (b.sentAt ?? 0))
    .slice(0, 10)) {
    const h = await fetchHistory(temporalClient, r.renderId!);
    tls.push([{ label: 'http.sent', at: r.sentAt! }, ...timeline(h)].filter((m) => !m.label.startsWith('collectOutputs')).slice(0, 16));
  }
  const segs = segmentMedians(tls).filter((x) => x.p50 >= 5);
  log(`memory: peak RSS ${mb(peak)} (idle ${mb(idle)})`);
  if (opts.stopAfter) await killTree(svc.child, 8_000);
  const result: BenchResult = {
    name: 'memory',
    before: BEFORE.memory,
    title: `Memory: ${clients} concurrent img2img clients with ${mb(imageBytes)} init images, fake held at ${holdMs} ms/render`,
    figure: `peak RSS ${mb(peak)}, all ${pids.length} node process(es) summed (idle ${mb(idle)}, +${mb(peak - idle)}; kernel VmHWM ${mb(hwm)}, summed per process)`,
    budget: `≤ ${mb(BUDGET_BYTES)} RSS`,
    verdict: Math.max(peak, hwm) <= BUDGET_BYTES && ok.length === clients ? 'PASS' : 'OVER',
    lines: [
      `service: node pids ${pids.join(', ')} (mode start${opts.root ? `, ${opts.root}` : ''}), RSS summed over all of them` +
        (svc.nodePid === svc.child.pid ? '' : `; tsx wrapper pid ${svc.child.pid}, ${mb(wrapperRss)}, not counted: production runs node directly`),
      `JS heap and ArrayBuffers below: the first process's (the one that ingests the request bodies)`,
      `peak RSS by phase: sending ${mb(peakOf('sending'))}  all waiting ${mb(peakOf('waiting'))}  draining ${mb(peakOf('draining'))}`,
      `all ${clients} renders started and uploaded after ${Number.isFinite(allWaitingAfter) ? `${(allWaitingAfter / 1000).toFixed(1)} s` : 'n/a (timed out)'}; ` +
        `${completedWhileHeld} had completed before the hold was lifted`,
      `responses: ${ok.length}/${clients} OK, ${results.length - ok.length} failed; drained ${((drainedAt - waitingSince) / 1000).toFixed(1)} s after all were waiting`,
      `renders started after sending: ${progress.join(', ') || 'n/a'}`,
      ...failureSummary(results),
      `client time per request: ${fmtDist(dist(ok.map((r) => r.ms)))}`,
      `${samples.length} RSS samples every 50 ms`,
      heapLine('at the RSS peak      ', atPeak),
      heapLine('all waiting (typical)', midWait),
      ...threadLine(threadRows, atPeak?.at),
      'note: RSS that the heap gave back is not returned to the OS at once; BENCH_MEM_GC=1 forces a GC per sample.',
      '',
      `the pile-up, p50 per segment ≥ 5 ms over the first ${tls.length} renders (client send, Temporal event times):`,
      ...segs.map((x) => `  ${x.segment.padEnd(44)} ${(x.p50 / 1000).toFixed(2).padStart(7)} s`),
    ],
  };
  return { peak, idle, hwm, ok: ok.length, clients, result };
}

function failureSummary(results: Array<{ status: number; error?: string }>): string[] {
  const by = new Map<string, number>();
  for (const r of results)
    if (r.status !== 200) by.set(`${r.status} ${r.error ?? ''}`.slice(0, 160), (by.get(`${r.status} ${r.error ?? ''}`.slice(0, 160)) ?? 0) + 1);
  return [...by.entries()].slice(0, 4).map(([k, n]) => `  failed ×${n}: ${k}`);
}

/** The other threads' own heaps (`start`'s worker thread) at the sample nearest `at`. */
function threadLine(rows: MemRow[], at: number | undefined): string[] {
  if (at === undefined || rows.length === 0) return [];
  const near = new Map<number, MemRow>();
  for (const r of rows) {
    const best = near.get(r.thread!);
    if (!best || Math.abs(r.at - at) < Math.abs(best.at - at)) near.set(r.thread!, r);
  }
  return [...near.values()].map(
    (r) => `  thread ${r.thread} at the peak: JS heap ${mb(r.heapTotal)} (used ${mb(r.heapUsed)}) + ArrayBuffers ${mb(r.arrayBuffers)} (part of "other" above)`,
  );
}

interface MemRow {
  at: number;
  thread?: number;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

function readMemLog(file: string): MemRow[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as MemRow);
  } catch {
    return [];
  }
}
