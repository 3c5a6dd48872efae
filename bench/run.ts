/**
 * Benchmarks for the budgets of docs/durability.md. Each prints a block with the measured figure, the budget and
 * PASS/OVER; figures are relative to a baseline measured in the same run where the budget is relative.
 *
 *   npx tsx bench/run.ts [--only overhead,latency,throughput,memory,history] [--quick]
 *   npx tsx bench/run.ts --against <commit> [--rounds N] [--quick]   (or --against-dir <built checkout>)
 *
 * `--against` is the regression gate (bench/against.ts): overhead and memory of this tree and of another
 * commit's build, side by side under one harness in one sitting, with their ratios.
 *
 * Starts a real Temporal dev server, fake ComfyUIs and comfy-durable child processes on 127.0.0.1 only,
 * and stops them all at the end. Every loop is bounded in count and time; a watchdog ends the run.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createContext, type BenchContext } from './lib/context.ts';
import { printBlock, printSummary, log, type BenchResult } from './lib/report.ts';
import { Cleanups, benchRuntime, buildDist } from './lib/stack.ts';
import { benchOverhead } from './overhead.ts';
import { benchLatency } from './latency.ts';
import { benchThroughput, prepareThroughput } from './throughput.ts';
import { benchMemory, prepareMemory } from './memory.ts';
import { benchHistory } from './history-size.ts';
import { benchAgainst, prepareOther, type OtherBuild } from './against.ts';

/** `allot`: seconds a benchmark may take (including starting what it needs), full run / --quick. */
const BENCHES: Record<string, { title: string; budget: string; allot: [number, number]; run: (ctx: BenchContext) => Promise<BenchResult> }> = {
  overhead: { title: 'orchestration overhead', budget: '≤ 40 ms p50', allot: [90, 35], run: benchOverhead },
  latency: { title: 'result latency', budget: '≤ 20 ms p95', allot: [60, 15], run: benchLatency },
  throughput: { title: 'throughput', budget: '≥ 25 renders/s', allot: [95, 30], run: benchThroughput },
  memory: { title: 'memory', budget: '≤ 300 MB RSS', allot: [120, 45], run: benchMemory },
  history: { title: 'history size', budget: '≤ 64 KB per render', allot: [30, 20], run: benchHistory },
};

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    against: { type: 'string' },
    'against-dir': { type: 'string' },
    rounds: { type: 'string' },
    smoke: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
});
if (values.help) {
  process.stdout.write(
    `usage: tsx bench/run.ts [--only ${Object.keys(BENCHES).join(',')}] [--quick | --smoke]\n` +
      `       tsx bench/run.ts --against <commit> | --against-dir <built checkout> [--rounds N] [--quick | --smoke]\n`,
  );
  process.exit(0);
}
const againstSpec = values.against || values['against-dir'] ? { commit: values.against, dir: values['against-dir'] } : undefined;
const rounds = Math.max(1, Number(values.rounds ?? (values.quick || values.smoke ? 1 : 2)));
if (againstSpec) {
  // Overhead then `rounds` memory runs per side; a full round of memory is ~2 min a side on 2 cores.
  BENCHES.against = {
    title: 'against another commit',
    budget: 'not above it',
    allot: [240 + rounds * 260, 90 + rounds * 110],
    run: (ctx) => benchAgainst(ctx, other!, rounds),
  };
}
let other: OtherBuild | undefined;
if (againstSpec) {
  if (benchRuntime() !== 'dist') throw new Error('--against runs the compiled builds (unset BENCH_RUNTIME)');
  // Before the watchdog starts: a first checkout's npm ci takes minutes.
  other = prepareOther(againstSpec);
}
const selected = againstSpec
  ? ['against']
  : values.only
    ? values.only
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : Object.keys(BENCHES);
for (const s of selected) {
  if (!BENCHES[s]) {
    process.stderr.write(`unknown benchmark ${JSON.stringify(s)}; known: ${Object.keys(BENCHES).join(', ')}\n`);
    process.exit(2);
  }
}

const smoke = values.smoke ?? false;
const quick = (values.quick ?? false) || smoke;
const budgetMs = selected.reduce((a, s) => a + BENCHES[s]!.allot[quick ? 1 : 0] * 1000, 0);
const started = Date.now();
const cleanups = new Cleanups();
const ctx = createContext(quick, started + budgetMs, cleanups, smoke);

let cleaning: Promise<void> | undefined;
const cleanup = (): Promise<void> => (cleaning ??= cleanups.runAll());
const watchdog = setTimeout(() => {
  log(`watchdog: run exceeded ${budgetMs / 1000} s, stopping`);
  void cleanup().finally(() => process.exit(3));
}, budgetMs + 20_000);
watchdog.unref();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    log(`${sig}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

if (benchRuntime() === 'dist') buildDist();

process.stdout.write(
  `comfy-durable benchmarks${smoke ? ' (smoke: figures meaningless)' : quick ? ' (quick)' : ''}: ${selected.join(', ')}; node ${process.version}, ` +
    `${(await import('node:os')).cpus().length} CPUs, load average ${loadavg()}, LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'warn'} for the service, ` +
    `service runs ${benchRuntime() === 'dist' ? 'compiled dist/ (npm start)' : 'TypeScript via tsx (BENCH_RUNTIME=tsx)'}\n`,
);
const results: BenchResult[] = [];
try {
  // Shared servers start outside any benchmark's time allotment.
  try {
    await ctx.temporal();
    const starts: Array<Promise<unknown>> = [];
    if (selected.some((s) => ['overhead', 'latency', 'history', 'against'].includes(s))) starts.push(ctx.single());
    // --quick starts every service at once (they wait idle until their turn); a full run starts each one
    // just before its benchmark, so idle pollers of other services do not add noise.
    if (quick && selected.includes('throughput')) starts.push(prepareThroughput(ctx));
    if (quick && selected.includes('memory')) starts.push(prepareMemory(ctx));
    await Promise.all(starts);
  } catch (e) {
    log(`could not start the shared stack: ${(e as Error).message}`);
    throw e;
  }
  for (const name of selected) {
    const b = BENCHES[name]!;
    const t0 = Date.now();
    ctx.deadline = t0 + b.allot[quick ? 1 : 0] * 1000;
    log(`running ${name} (load average ${loadavg()})`);
    try {
      const r = await b.run(ctx);
      printBlock(r);
      results.push(r);
    } catch (e) {
      const r: BenchResult = {
        name,
        title: b.title,
        figure: `failed: ${(e as Error).message.split('\n')[0]}`,
        budget: b.budget,
        verdict: 'ERROR',
        lines: [String((e as Error).stack ?? e).slice(0, 2000)],
      };
      printBlock(r);
      results.push(r);
    }
    log(`${name} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
} finally {
  await cleanup();
}
printSummary(results);
process.stdout.write(`load average at the end: ${loadavg()} (1/5/15 min; other work on the machine skews every figure)\n`);
process.stdout.write(`total ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
process.exit(results.some((r) => r.verdict === 'ERROR') ? 1 : 0);

function loadavg(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'n/a';
  }
}
