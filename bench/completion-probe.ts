/**
 * How a client learns that a render finished, on the embedded server: the render's shape (one
 * activity on another queue, no-op) started with `requestEagerStart` on the worker's connection and waited
 * for with `result()` (the history long-poll, what the front does), against the same workflow started with
 * update-with-start and waited for through its update (the server answers the update from memory when the
 * workflow task that completes it is recorded), on both connections. Interleaved; prints client start →
 * result and, the part that matters, the activity's return → the client holding the result.
 *
 *   npx tsx bench/completion-probe.ts [--runs 40]
 */
import { parseArgs } from 'node:util';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { startProbeStack } from './lib/probe-stack.ts';
import { dist, ms, nowMs } from './lib/report.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' } } });
const RUNS = Number(values.runs);
const taskQueue = 'completion-probe';
const otherQueue = 'completion-probe-gpu';
let returnedAt = 0;
const activities = {
  noop: async (stage: string) => {
    returnedAt = nowMs();
    return stage;
  },
};
const stack = await startProbeStack({ name: 'completion-probe', taskQueue, otherQueue, activities, otherQueueSlots: 4 });
const { viaGrpc, viaNative } = stack;
const variants = [
  { name: 'eager start + result() (the front today)', client: viaNative, update: false },
  { name: 'start on its own connection + result()', client: viaGrpc, update: false },
  { name: 'update-with-start, own connection', client: viaGrpc, update: true },
  { name: "update-with-start, worker's connection", client: viaNative, update: true },
];
const totals = variants.map(() => [] as number[]);
const tails = variants.map(() => [] as number[]);
let seq = 0;
try {
  for (let i = 0; i < RUNS + 3; i++) {
    for (const [v, variant] of variants.entries()) {
      const workflowId = `completion-${seq++}`;
      const t0 = nowMs();
      if (variant.update) {
        const startWorkflowOperation = new WithStartWorkflowOperation('probeCrossQueueWithUpdate', {
          taskQueue,
          workflowId,
          args: [otherQueue],
          workflowIdConflictPolicy: 'FAIL',
        });
        await variant.client.workflow.executeUpdateWithStart('result', { startWorkflowOperation });
      } else {
        const h = await variant.client.workflow.start('probeCrossQueueWithUpdate', {
          taskQueue,
          workflowId,
          args: [otherQueue],
          ...(v === 0 ? { requestEagerStart: true } : {}),
        });
        await h.result();
      }
      const t1 = nowMs();
      // The first three warm up bundles, connections and the JIT.
      if (i >= 3) {
        totals[v]!.push(t1 - t0);
        tails[v]!.push(t1 - returnedAt);
      }
    }
  }
} finally {
  await stack.stop();
}
process.stdout.write(`completion probe: ${RUNS} workflows per variant, interleaved (one activity on another queue, no-op)\n`);
process.stdout.write(`${'variant'.padEnd(44)}${'start → result p50 (p95)'.padEnd(28)}activity returned → result p50 (p95)\n`);
for (const [v, variant] of variants.entries()) {
  const t = dist(totals[v]!);
  const e = dist(tails[v]!);
  process.stdout.write(`${variant.name.padEnd(44)}${`${ms(t.p50)} (${ms(t.p95)})`.padEnd(28)}${ms(e.p50)} (${ms(e.p95)})\n`);
}
process.exit(0);
