/**
 * Temporal workers of one process: the general queue (workflows and I/O activities) and, per ComfyUI
 * backend, a queue with exactly one activity slot that runs prompts — one GPU, one render.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from '../log.ts';
import type { Backend } from '../render/types.ts';
import type { RenderActivities } from '../activities/types.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
export const WORKFLOWS_PATH = path.join(here, '..', 'workflows', 'index.ts');

export interface WorkerSetOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  backends: Backend[];
  activities: RenderActivities;
  logger: Logger;
  shutdownGraceMs?: number;
}

export interface WorkerSet {
  run(): Promise<void>;
  shutdown(): Promise<void>;
  connection: NativeConnection;
}

export async function createWorkers(opts: WorkerSetOptions): Promise<WorkerSet> {
  const connection = await NativeConnection.connect({ address: opts.address });
  const { runPrompt, ...ioActivities } = opts.activities;
  const shutdownGraceTime = opts.shutdownGraceMs ?? 10_000;
  const general = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    activities: ioActivities,
    shutdownGraceTime,
  });
  const gpu = await Promise.all(
    opts.backends.map((backend) =>
      Worker.create({
        connection,
        namespace: opts.namespace,
        taskQueue: backend.taskQueue,
        activities: { runPrompt },
        maxConcurrentActivityTaskExecutions: 1,
        // Cancellation reaches an activity only in a heartbeat response, and heartbeats are throttled to 80% of
        // the heartbeat timeout by default: without this, cancelling a render could take ~24 s to interrupt
        // ComfyUI. One small RPC every 2 s per GPU is nothing.
        maxHeartbeatThrottleInterval: '2s',
        shutdownGraceTime,
      }),
    ),
  );
  const all = [general, ...gpu];
  opts.logger.info({ taskQueue: opts.taskQueue, backends: opts.backends.map((b) => b.taskQueue) }, 'workers created');
  return {
    connection,
    run: async () => {
      await Promise.all(all.map((w) => w.run()));
      await connection.close();
    },
    shutdown: async () => {
      for (const w of all) if (w.getState() === 'RUNNING') w.shutdown();
    },
  };
}
