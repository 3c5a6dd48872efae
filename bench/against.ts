/**
 * `--against <commit>`: the regression gate. Another commit's build runs under THIS harness (same Temporal
 * server, same fake ComfyUI, same clients), side by side with this tree, in one sitting:
 * - overhead: this tree's service, the other's and a direct client take turns render by render (the order
 *   rotates), so machine drift is shared; `--rounds` blocks of renders, pooled: p50 over a direct client for
 *   both, and their ratio, with each block's ratio beside it (one block's ratio moves by a few per cent
 *   between sittings of the same two builds: the spread says how far a difference is from that noise);
 * - memory: the 100-client 2 MB img2img pile-up on a fresh service of each, in alternating order over
 *   `--rounds` rounds, every node process of a service summed; peaks and their ratio.
 * The other commit is checked out outside this tree (a git worktree in the temp dir, its own `npm ci`, since
 * its lockfile may differ, then its scripts/build.sh) and kept for the next run; `--against-dir` names a
 * checkout built already.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ComfyClient } from '../src/comfyui/client.ts';
import type { BenchContext } from './lib/context.ts';
import { dist, log, mb, ms, printBlock, type BenchResult, type Dist } from './lib/report.ts';
import { ROOT, startBenchService } from './lib/stack.ts';
import { BUDGET_BYTES, runMemory, type MemoryRun } from './memory.ts';
import { directRender, graphFor, stackRender, txt2imgBody } from './overhead.ts';
import { activityTimings, fetchHistory, segmentMedians, timeline, type Mark } from './lib/history.ts';

export interface OtherBuild {
  /** What the other side is called in the table: its short commit. */
  label: string;
  root: string;
}

function git(args: string[], cwd = ROOT): string {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

function run(cmd: string, args: string[], cwd: string): void {
  log(`${path.basename(cwd)}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} in ${cwd} failed with ${r.status ?? r.signal}`);
}

/** This tree's label: its commit, marked when the work tree has changes. */
export function ownLabel(): string {
  const head = git(['rev-parse', '--short', 'HEAD']);
  return git(['status', '--porcelain', '--untracked-files=no']) ? `${head}+changes` : head;
}

/** A built checkout of `commit` (or the one in `dir`), outside this tree. */
export function prepareOther(spec: { commit?: string; dir?: string }): OtherBuild {
  if (spec.dir) {
    const root = path.resolve(spec.dir);
    if (!existsSync(path.join(root, 'scripts', 'run.sh'))) throw new Error(`${root} is not a comfy-durable checkout (no scripts/run.sh)`);
    run('bash', ['scripts/build.sh'], root);
    return { label: git(['rev-parse', '--short', 'HEAD'], root), root };
  }
  const sha = git(['rev-parse', '--verify', `${spec.commit}^{commit}`]);
  const root = path.join(os.tmpdir(), `comfy-durable-bench-${sha.slice(0, 12)}`);
  if (!existsSync(path.join(root, 'scripts', 'run.sh'))) run('git', ['worktree', 'add', '--detach', root, sha], ROOT);
  // Its own dependencies: never this tree's node_modules (the lockfiles of two commits may differ).
  if (!existsSync(path.join(root, 'node_modules', '.package-lock.json'))) run('npm', ['ci', '--no-audit', '--no-fund'], root);
  run('bash', ['scripts/build.sh'], root);
  log(`other side: ${sha.slice(0, 7)} in ${root} (kept for the next run; \`git worktree remove --force ${root}\` drops it)`);
  return { label: sha.slice(0, 7), root };
}

const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const ratio = (a: number, b: number): string => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : 'n/a');
const median = (xs: number[]): number => dist(xs).p50;

interface OverheadAB {
  self: Dist;
  other: Dist;
  direct: Dist;
  /** Each block's overhead ratio (this tree over the other), in the order they ran. */
  blockRatios: number[];
  /** Where each side's time goes: p50 per segment (client send, Temporal event times, client receive). */
  segments: { self: Map<string, number>; other: Map<string, number> };
}

type StackRun = Awaited<ReturnType<typeof stackRender>>;

async function segmentsOf(ctx: BenchContext, runs: StackRun[]): Promise<Map<string, number>> {
  const { client } = await ctx.temporal();
  const tls: Mark[][] = [];
  const stages = new Map<string, number[]>();
  for (const r of runs.slice(0, 20)) {
    const h = await fetchHistory(client, r.renderId);
    tls.push([{ label: 'http.sent', at: r.sentAt }, ...timeline(h), { label: 'http.done', at: r.doneAt }]);
    for (const [stage, v] of activityTimings(h)) stages.set(stage, [...(stages.get(stage) ?? []), v]);
  }
  const own = [...stages].map(([stage, v]): [string, number] => [`(activity's own timing) ${stage}`, median(v)]);
  return new Map([...segmentMedians(tls).map((x): [string, number] => [x.segment, x.p50]), ...own]);
}

async function overheadAB(ctx: BenchContext, other: OtherBuild, blocks: number): Promise<OverheadAB> {
  const { fake, svc } = await ctx.single();
  const { temporal } = await ctx.temporal();
  const otherSvc = await startBenchService(ctx.cleanups, { temporalAddress: temporal.address, comfyUrl: fake.url, root: other.root });
  const n = ctx.smoke ? 3 : ctx.quick ? 12 : 40;
  const warm = ctx.smoke ? 1 : ctx.quick ? 3 : 5;
  const comfy = new ComfyClient({ baseUrl: fake.url });
  const self: StackRun[] = [];
  const theirs: StackRun[] = [];
  const direct: number[] = [];
  const blockRatios: number[] = [];
  try {
    for (let i = 0; i < warm; i++) {
      await stackRender(svc.url, txt2imgBody(`warm self ${i}`, 700_000 + i));
      await stackRender(otherSvc.url, txt2imgBody(`warm other ${i}`, 710_000 + i));
      await directRender(comfy, graphFor(txt2imgBody(`warm direct ${i}`, 720_000 + i), `bench-warm-${i}`));
    }
    for (let b = 0; b < blocks; b++) {
      const from = { self: self.length, theirs: theirs.length, direct: direct.length };
      const stopAt = Math.min(ctx.deadline, Date.now() + (ctx.quick ? 40_000 : 150_000));
      for (let i = b * n; i < (b + 1) * n && Date.now() < stopAt; i++) {
        const steps = [
          async () => self.push(await stackRender(svc.url, txt2imgBody(`ab self ${i}`, 300_000 + i))),
          async () => theirs.push(await stackRender(otherSvc.url, txt2imgBody(`ab other ${i}`, 400_000 + i))),
          async () => direct.push(await directRender(comfy, graphFor(txt2imgBody(`ab direct ${i}`, 500_000 + i), `bench-ab-${i}`))),
        ];
        // Each of the three goes first, second and third in turn: drift favours none.
        for (let k = 0; k < 3; k++) await steps[(i + k) % 3]!();
      }
      const d = median(direct.slice(from.direct));
      const ov = (runs: StackRun[]): number => median(runs.map((r) => r.ms)) - d;
      blockRatios.push(ov(self.slice(from.self)) / ov(theirs.slice(from.theirs)));
    }
  } finally {
    await comfy.close();
  }
  const segments = { self: await segmentsOf(ctx, self), other: await segmentsOf(ctx, theirs) };
  return { self: dist(self.map((r) => r.ms)), other: dist(theirs.map((r) => r.ms)), direct: dist(direct), blockRatios, segments };
}

function segmentRows(s: OverheadAB['segments'], row: (n: string, a: string, b: string, q: string) => string): string[] {
  const names = [...new Set([...s.self.keys(), ...s.other.keys()])];
  const cell = (v: number | undefined): string => (v === undefined ? '—' : ms(v));
  return names.map((n) => row(`  ${n}`, cell(s.self.get(n)), cell(s.other.get(n)), ''));
}

export async function benchAgainst(ctx: BenchContext, other: OtherBuild, rounds: number): Promise<BenchResult> {
  const self = ownLabel();
  const loads: string[] = [`start ${loadavg()}`];
  log(`against ${other.label}: overhead, interleaved render by render, ${rounds} block(s)`);
  const o = await overheadAB(ctx, other, rounds);
  loads.push(`after overhead ${loadavg()}`);
  const memSelf: MemoryRun[] = [];
  const memOther: MemoryRun[] = [];
  for (let r = 0; r < rounds; r++) {
    // Alternating order: A B, B A, …
    const order = r % 2 === 0 ? (['self', 'other'] as const) : (['other', 'self'] as const);
    for (const side of order) {
      log(`against ${other.label}: memory round ${r + 1}/${rounds}, ${side === 'self' ? self : other.label} (load ${loadavg()})`);
      const m = await runMemory(ctx, { key: `memory-${side}-${r}`, stopAfter: true, ...(side === 'other' ? { root: other.root } : {}) });
      (side === 'self' ? memSelf : memOther).push(m);
      // Each run's own block: where its memory went (heaps by thread, phases, the pile-up's timeline).
      printBlock({ ...m.result, name: `memory ${side === 'self' ? self : other.label}` });
    }
  }
  loads.push(`end ${loadavg()}`);
  const ovSelf = o.self.p50 - o.direct.p50;
  const ovOther = o.other.p50 - o.direct.p50;
  const peakSelf = median(memSelf.map((m) => Math.max(m.peak, m.hwm)));
  const peakOther = median(memOther.map((m) => Math.max(m.peak, m.hwm)));
  const idleSelf = median(memSelf.map((m) => m.idle));
  const idleOther = median(memOther.map((m) => m.idle));
  const allOk = [...memSelf, ...memOther].every((m) => m.ok === m.clients);
  const row = (name: string, a: string, b: string, q: string): string => `${name.padEnd(34)} ${a.padStart(16)} ${b.padStart(16)} ${q.padStart(8)}`;
  const runs = (ms: MemoryRun[]): string => ms.map((m) => `${mb(Math.max(m.peak, m.hwm))} (${m.ok}/${m.clients} OK)`).join(', ');
  const better = ovSelf <= ovOther && peakSelf <= peakOther;
  return {
    name: 'against',
    title: `This tree (${self}) against ${other.label}, one harness, one sitting`,
    figure: `overhead p50 ${ms(ovSelf)} vs ${ms(ovOther)} (${ratio(ovSelf, ovOther)}); peak ${mb(peakSelf)} vs ${mb(peakOther)} (${ratio(peakSelf, peakOther)})`,
    budget: `not above ${other.label} on either; peak ≤ ${mb(BUDGET_BYTES)}`,
    verdict: o.self.n === 0 || o.other.n === 0 ? 'ERROR' : better && peakSelf <= BUDGET_BYTES && allOk ? 'PASS' : 'OVER',
    lines: [
      row('', self, other.label, 'ratio'),
      row('overhead p50 over a direct client', ms(ovSelf), ms(ovOther), ratio(ovSelf, ovOther)),
      row('stack p50 (POST → images)', ms(o.self.p50), ms(o.other.p50), ratio(o.self.p50, o.other.p50)),
      row('stack p95', ms(o.self.p95), ms(o.other.p95), ratio(o.self.p95, o.other.p95)),
      row('direct client p50 (shared)', ms(o.direct.p50), ms(o.direct.p50), ''),
      row(`peak RSS, median of ${rounds} (all node procs)`, mb(peakSelf), mb(peakOther), ratio(peakSelf, peakOther)),
      row('idle RSS before the pile-up', mb(idleSelf), mb(idleOther), ratio(idleSelf, idleOther)),
      `overhead ratio of each block of the run (${o.blockRatios.length} block(s), pooled above): ${o.blockRatios.map((r) => `${r.toFixed(2)}×`).join(', ')}`,
      `renders per side in the overhead run: ${o.self.n} / ${o.other.n} (direct ${o.direct.n}); memory runs, peak (max of sampled sum and summed VmHWM): ${self} ${runs(memSelf)}; ${other.label} ${runs(memOther)}`,
      `memory responses all OK: ${allOk ? 'yes' : 'NO'}; ${other.label} built in ${other.root}`,
      `load average (1/5/15 min): ${loads.join('; ')}`,
      '',
      "where each side's time goes, p50 per segment (client send, Temporal event times, client receive):",
      ...segmentRows(o.segments, row),
    ],
  };
}
