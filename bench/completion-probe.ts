/**
 * How a client learns that a render finished (issue 11 §3), on the embedded server: the render's shape (one
 * activity on another queue, no-op) started with `requestEagerStart` on the worker's connection and waited
 * for with `result()` (the history long-poll, what the front does), against the same workflow started with
 * update-with-start and waited for through its update (the server answers the update from memory when the
 * workflow task that completes it is recorded), on both connections. Interleaved; prints client start →
 * result and, the part that matters, the activity's return → the client holding the result.
 *
 *   npx tsx bench/completion-probe.ts [--runs 40]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { EMBEDDED_DYNAMIC_CONFIG } from '../src/temporal/dev-server.ts';
import { startTestTemporal } from '../test/support/temporal.ts';
import { dist, ms, nowMs } from './lib/report.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' } } });
const RUNS = Number(values.runs);
Runtime.install({ logger: new DefaultLogger('ERROR') });

const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-completion-probe-'));
const server = await startTestTemporal(dir, { ...EMBEDDED_DYNAMIC_CONFIG });
const native = await NativeConnection.connect({ address: server.address });
const grpc = await Connection.connect({ address: server.address });
const viaNative = new Client({ connection: native });
const viaGrpc = new Client({ connection: grpc });
const taskQueue = 'completion-probe';
const otherQueue = 'completion-probe-gpu';
let returnedAt = 0;
const activities = {
  noop: async (stage: string) => {
    returnedAt = nowMs();
    return stage;
  },
};
const workers = [
  await Worker.create({ connection: native, taskQueue, workflowsPath: path.join(here, 'lib', 'probe-workflows.ts'), activities }),
  await Worker.create({ connection: native, taskQueue: otherQueue, activities, maxConcurrentActivityTaskExecutions: 4 }),
];
const running = workers.map((w) => w.run());
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
        const startWorkflowOperation = new WithStartWorkflowOperation('probeCrossQueueWithUpdate', { taskQueue, workflowId, args: [otherQueue], workflowIdConflictPolicy: 'FAIL' });
        await variant.client.workflow.executeUpdateWithStart('result', { startWorkflowOperation });
      } else {
        const h = await variant.client.workflow.start('probeCrossQueueWithUpdate', { taskQueue, workflowId, args: [otherQueue], ...(v === 0 ? { requestEagerStart: true } : {}) });
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
  for (const w of workers) w.shutdown();
  await Promise.all(running);
  await native.close();
  await grpc.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`completion probe: ${RUNS} workflows per variant, interleaved (one activity on another queue, no-op)\n`);
process.stdout.write(`${'variant'.padEnd(44)}${'start → result p50 (p95)'.padEnd(28)}activity returned → result p50 (p95)\n`);
for (const [v, variant] of variants.entries()) {
  const t = dist(totals[v]!);
  const e = dist(tails[v]!);
  process.stdout.write(`${variant.name.padEnd(44)}${`${ms(t.p50)} (${ms(t.p95)})`.padEnd(28)}${ms(e.p50)} (${ms(e.p95)})\n`);
}
process.exit(0);
