/** Figures and the printed blocks: every benchmark ends in one block with figure, budget and PASS/OVER. */

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  // Nearest-rank on the sorted sample (p in 0..100).
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

export interface Dist {
  n: number;
  p50: number;
  p95: number;
  min: number;
  max: number;
  mean: number;
}

export function dist(values: number[]): Dist {
  const n = values.length;
  return {
    n,
    p50: percentile(values, 50),
    p95: percentile(values, 95),
    min: n ? Math.min(...values) : NaN,
    max: n ? Math.max(...values) : NaN,
    mean: n ? values.reduce((a, b) => a + b, 0) / n : NaN,
  };
}

export const ms = (v: number, digits = 1): string => (Number.isFinite(v) ? `${v.toFixed(digits)} ms` : 'n/a');
export const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
export const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`;

export function fmtDist(d: Dist): string {
  return `p50 ${ms(d.p50)}  p95 ${ms(d.p95)}  min ${ms(d.min)}  max ${ms(d.max)}  (n=${d.n})`;
}

export type Verdict = 'PASS' | 'OVER' | 'ERROR';

export interface BenchResult {
  name: string;
  title: string;
  /** One line: the measured figure the verdict is about. */
  figure: string;
  budget: string;
  verdict: Verdict;
  /** Details printed in the block (distributions, baselines, breakdowns, notes). */
  lines: string[];
  /** The same figure before the late-bound reshape (BEFORE). */
  before?: string;
}

/**
 * The figures before the late-bound reshape and the embedded server's settings, measured with this bench
 * on this 2-core machine: printed beside each new figure so a run shows before and after.
 */
export const BEFORE = {
  overhead: '281 ms p50 over a direct client (stack 302 ms, direct 22 ms)',
  latency: '100 ms p95 (p50 93 ms)',
  throughput: '15.8 renders/s with 4 backends (Temporal ceiling of that shape 23.9)',
  memory: '906 MB peak RSS for 100 concurrent 2 MB img2img (idle 302 MB)',
  history: '10 KB per render, 27 KB for a batch of 4',
} as const;

export function printBlock(r: BenchResult): void {
  const bar = '='.repeat(78);
  const out = [
    bar,
    `[${r.name}] ${r.title}`,
    '-'.repeat(78),
    ...r.lines.map((l) => `  ${l}`),
    '-'.repeat(78),
    `  figure : ${r.figure}`,
    ...(r.before ? [`  before : ${r.before}`] : []),
    `  budget : ${r.budget}   (docs/durability.md)`,
    `  result : ${r.verdict}`,
    bar,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
}

export function printSummary(results: BenchResult[]): void {
  const w = Math.max(...results.map((r) => r.name.length), 8);
  const lines = [
    '',
    'SUMMARY (after; before = the same figure before the late-bound reshape)',
    ...results.flatMap((r) => [
      `  ${r.name.padEnd(w)}  ${r.verdict.padEnd(5)}  ${r.figure}   [budget ${r.budget}]`,
      ...(r.before ? [`  ${''.padEnd(w)}  before ${r.before}`] : []),
    ]),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
}

export const sleep = (msec: number): Promise<void> => new Promise((r) => setTimeout(r, msec));

/** Epoch ms with sub-ms resolution (same clock base as Date.now()). */
export const nowMs = (): number => performance.timeOrigin + performance.now();
