/**
 * Eager workflow start on the embedded server: the render shape (local activity + one activity on another
 * queue, no-ops) started by a client on its own gRPC connection, by a client on the worker's
 * NativeConnection, and by that client with `requestEagerStart` (the start response carries the first
 * workflow task to the worker in this process: one matching hop and one poll fewer). Interleaved, p50/p95.
 *
 *   npx tsx bench/eager-probe.ts [--runs 40]
 */
import { parseArgs } from 'node:util';
import { startProbeStack } from './lib/probe-stack.ts';
import { dist, ms } from './lib/report.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' } } });
const RUNS = Number(values.runs);
const taskQueue = 'eager-probe';
const otherQueue = 'eager-probe-other';
const stack = await startProbeStack({ name: 'eager-probe', taskQueue, otherQueue, activities: { noop: async (stage: string) => stage }, otherQueueSlots: 1 });
const { viaGrpc, viaNative } = stack;
const variants = [
  { name: 'own gRPC connection', client: viaGrpc, eager: false },
  { name: "worker's NativeConnection", client: viaNative, eager: false },
  { name: 'NativeConnection + requestEagerStart', client: viaNative, eager: true },
];
const times = variants.map(() => [] as number[]);
let eagerCount = 0;
let seq = 0;
try {
  for (let i = 0; i < RUNS + 2; i++) {
    for (const [v, variant] of variants.entries()) {
      const t0 = performance.now();
      const h = await variant.client.workflow.start('probeRenderShape', {
        taskQueue,
        workflowId: `eager-${seq++}`,
        args: [otherQueue],
        ...(variant.eager ? { requestEagerStart: true } : {}),
      });
      await h.result();
      if (variant.eager && h.eagerlyStarted) eagerCount++;
      if (i >= 2) times[v]!.push(performance.now() - t0);
    }
  }
} finally {
  await stack.stop();
}
process.stdout.write(`eager probe: ${RUNS} render-shaped workflows per variant, interleaved; client start → result\n`);
for (const [v, variant] of variants.entries()) {
  const d = dist(times[v]!);
  process.stdout.write(`  ${variant.name.padEnd(40)} p50 ${ms(d.p50, 1)}  p95 ${ms(d.p95, 1)}\n`);
}
process.stdout.write(`  eagerly started: ${eagerCount} of ${RUNS + 2}\n`);
process.exit(0);
