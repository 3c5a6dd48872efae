/**
 * Eager workflow start on the embedded server: the render shape (local activity + one activity on another
 * queue, no-ops) started by a client on its own gRPC connection, by a client on the worker's
 * NativeConnection, and by that client with `requestEagerStart` (the start response carries the first
 * workflow task to the worker in this process: one matching hop and one poll fewer). Interleaved, p50/p95.
 *
 *   npx tsx bench/eager-probe.ts [--runs 40]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { EMBEDDED_DYNAMIC_CONFIG } from '../src/temporal/dev-server.ts';
import { startTestTemporal } from '../test/support/temporal.ts';
import { dist, ms } from './lib/report.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' } } });
const RUNS = Number(values.runs);
Runtime.install({ logger: new DefaultLogger('ERROR') });

const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-eager-probe-'));
const server = await startTestTemporal(dir, { ...EMBEDDED_DYNAMIC_CONFIG });
const native = await NativeConnection.connect({ address: server.address });
const grpc = await Connection.connect({ address: server.address });
const viaGrpc = new Client({ connection: grpc });
const viaNative = new Client({ connection: native });
const taskQueue = 'eager-probe';
const otherQueue = 'eager-probe-other';
const activities = { noop: async (stage: string) => stage };
const workers = [
  await Worker.create({ connection: native, taskQueue, workflowsPath: path.join(here, 'lib', 'probe-workflows.ts'), activities }),
  await Worker.create({ connection: native, taskQueue: otherQueue, activities, maxConcurrentActivityTaskExecutions: 1 }),
];
const running = workers.map((w) => w.run());
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
  for (const w of workers) w.shutdown();
  await Promise.all(running);
  await native.close();
  await grpc.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`eager probe: ${RUNS} render-shaped workflows per variant, interleaved; client start → result\n`);
for (const [v, variant] of variants.entries()) {
  const d = dist(times[v]!);
  process.stdout.write(`  ${variant.name.padEnd(40)} p50 ${ms(d.p50, 1)}  p95 ${ms(d.p95, 1)}\n`);
}
process.stdout.write(`  eagerly started: ${eagerCount} of ${RUNS + 2}\n`);
process.exit(0);
