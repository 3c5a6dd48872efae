/**
 * Per-hop latency of the embedded Temporal server, with its stock settings and with ours
 * (EMBEDDED_DYNAMIC_CONFIG in src/temporal/dev-server.ts):
 *
 *   npx tsx bench/hop-probe.ts [--runs 30] [--quick]
 *
 * For each setting it starts a fresh dev server (SQLite file, WAL, as the service does) and a worker in
 * this process, then times sequential workflows client start → result: no activity, one activity on the
 * workflow's queue, one on another queue, everything in one local activity (the fewest round trips), the
 * collapsed render (local activity + GPU-queue activity) and the render's former shape (four activities,
 * one cross-queue). A "hop" is one task handed through the server
 * (workflow task or activity task). It also checks priority order on one single-slot queue: 10 tasks at key
 * 5 queued, then 2 at key 1, and prints the order they started in.
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
const { values } = parseArgs({ options: { runs: { type: 'string' }, quick: { type: 'boolean', default: false } } });
const RUNS = Number(values.runs ?? (values.quick ? 8 : 30));

Runtime.install({ logger: new DefaultLogger('ERROR') });

/** Workflow → number of task hops on the happy path (workflow tasks + non-local activity tasks). */
const SHAPES: Array<{ name: string; workflow: string; hops: number; cross: boolean }> = [
  { name: 'empty workflow', workflow: 'probeEmpty', hops: 1, cross: false },
  { name: 'one activity, same queue', workflow: 'probeOneActivity', hops: 3, cross: false },
  { name: 'one activity, other queue', workflow: 'probeCrossQueue', hops: 3, cross: true },
  { name: 'whole attempt as a local activity', workflow: 'probeLocalOnly', hops: 1, cross: false },
  { name: 'render now: local + GPU activity', workflow: 'probeRenderShape', hops: 3, cross: true },
  { name: 'render before: 4 activities', workflow: 'probeOldShape', hops: 9, cross: true },
];

interface ProbeResult {
  label: string;
  rows: Array<{ name: string; p50: number; p95: number; perHop: number }>;
  priorityOrder: number[];
}

async function probe(label: string, dynamicConfig: Record<string, unknown>): Promise<ProbeResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-hop-probe-'));
  const server = await startTestTemporal(dir, dynamicConfig);
  const connection = await NativeConnection.connect({ address: server.address });
  const clientConn = await Connection.connect({ address: server.address });
  const client = new Client({ connection: clientConn });
  const taskQueue = 'probe';
  const otherQueue = 'probe-other';
  const started: number[] = [];
  const activities = { noop: async (stage: string) => stage };
  const workers = [
    await Worker.create({ connection, taskQueue, workflowsPath: path.join(here, 'lib', 'probe-workflows.ts'), activities }),
    await Worker.create({ connection, taskQueue: otherQueue, activities, maxConcurrentActivityTaskExecutions: 1 }),
  ];
  const running = workers.map((w) => w.run());
  try {
    const rows: ProbeResult['rows'] = [];
    let seq = 0;
    for (const shape of SHAPES) {
      const times: number[] = [];
      for (let i = 0; i < RUNS + 2; i++) {
        const t0 = performance.now();
        await client.workflow.execute(shape.workflow, { taskQueue, workflowId: `${shape.workflow}-${seq++}`, args: shape.cross ? [otherQueue] : [] });
        // The first two warm up bundle caches and connections.
        if (i >= 2) times.push(performance.now() - t0);
      }
      const d = dist(times);
      rows.push({ name: shape.name, p50: d.p50, p95: d.p95, perHop: d.p50 / shape.hops });
    }
    // Priority: queue the tasks while no worker polls the queue, then start one single-slot worker.
    const prioQueue = 'probe-priority';
    const handles = [];
    for (const key of [...Array<number>(10).fill(5), 1, 1]) {
      handles.push(
        await client.workflow.start('probeCrossQueue', {
          taskQueue: prioQueue,
          workflowId: `prio-${seq++}`,
          args: [`${prioQueue}-gpu`],
          priority: { priorityKey: key },
        }),
      );
    }
    const wfWorker = await Worker.create({ connection, taskQueue: prioQueue, workflowsPath: path.join(here, 'lib', 'probe-workflows.ts'), activities });
    const wfRunning = wfWorker.run();
    // Let every workflow task run so that all 12 activities wait in the GPU queue before anyone polls it.
    await waitUntil(async () => {
      const d = await client.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: `${prioQueue}-gpu` },
        taskQueueType: 2,
        reportStats: true,
      });
      return Number(d.stats?.approximateBacklogCount ?? 0) >= 12;
    });
    const keys = new Map(handles.map((h, i) => [h.workflowId, i < 10 ? 5 : 1]));
    const gpu = await Worker.create({
      connection,
      taskQueue: `${prioQueue}-gpu`,
      maxConcurrentActivityTaskExecutions: 1,
      activities: {
        noop: async (stage: string) => {
          const { Context } = await import('@temporalio/activity');
          started.push(keys.get(Context.current().info.workflowExecution?.workflowId ?? '') ?? 0);
          return stage;
        },
      },
    });
    const gpuRunning = gpu.run();
    await Promise.all(handles.map((h) => h.result()));
    gpu.shutdown();
    wfWorker.shutdown();
    await Promise.all([gpuRunning, wfRunning]);
    return { label, rows, priorityOrder: started };
  } finally {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await Promise.all(running);
    await connection.close();
    await clientConn.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function waitUntil(cond: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const results = [await probe('stock dev server', {}), await probe('EMBEDDED_DYNAMIC_CONFIG', { ...EMBEDDED_DYNAMIC_CONFIG })];
process.stdout.write(`hop probe: ${RUNS} sequential workflows per shape; p50 (p95) client start → result; per hop = p50 / hops\n`);
process.stdout.write(`settings: ${JSON.stringify(EMBEDDED_DYNAMIC_CONFIG)}\n\n`);
const pad = (s: string, n: number): string => s.padEnd(n);
process.stdout.write(`${pad('workflow', 44)}${results.map((r) => pad(r.label, 34)).join('')}\n`);
for (let i = 0; i < SHAPES.length; i++) {
  const shape = SHAPES[i]!;
  const cells = results.map((r) => {
    const row = r.rows[i]!;
    return pad(`${ms(row.p50, 0)} (${ms(row.p95, 0)}), ${ms(row.perHop, 1)}/hop`, 34);
  });
  process.stdout.write(`${pad(`${shape.name} [${shape.hops} hops]`, 44)}${cells.join('')}\n`);
}
process.stdout.write('\npriority: 10 tasks at key 5 queued, then 2 at key 1, one single-slot worker; start order:\n');
for (const r of results) process.stdout.write(`  ${pad(r.label, 26)} ${r.priorityOrder.join(' ')}\n`);
process.exit(0);
