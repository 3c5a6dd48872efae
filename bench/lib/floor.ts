/**
 * "Temporal floor": the render workflow's shape (5 workflow tasks, 4 activities, one on a single-slot queue
 * per backend) with no-op activities, run by a worker in the bench process against the same dev server.
 * A baseline from the same run: what Temporal round trips alone cost on this machine right now.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Cleanups } from './stack.ts';
import { nowMs } from './report.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
let runtimeInstalled = false;

export interface Floor {
  /** One floor render, client start → result, in ms. */
  once(): Promise<number>;
  /** Closed-loop clients for `ms`; completed floor renders per second. */
  rate(concurrency: number, ms: number): Promise<number>;
}

export async function startFloor(cleanups: Cleanups, address: string, client: Client, gpuQueues = 1): Promise<Floor> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  const taskQueue = `bench-floor-${Math.random().toString(36).slice(2, 8)}`;
  const connection = await NativeConnection.connect({ address });
  const activities = { noop: async (stage: string) => stage };
  const general = await Worker.create({ connection, taskQueue, workflowsPath: path.join(here, 'floor-workflow.ts'), activities });
  const gpus = await Promise.all(
    Array.from({ length: gpuQueues }, (_, i) =>
      Worker.create({ connection, taskQueue: `${taskQueue}.gpu-${i}`, activities, maxConcurrentActivityTaskExecutions: 1 }),
    ),
  );
  const all = [general, ...gpus];
  const running = Promise.all(all.map((w) => w.run()));
  cleanups.add('floor workers', async () => {
    for (const w of all) if (w.getState() === 'RUNNING') w.shutdown();
    await running.catch(() => undefined);
    await connection.close();
  });
  let seq = 0;
  const one = async (): Promise<number> => {
    const i = seq++;
    const t0 = nowMs();
    await client.workflow.execute('floorRender', { taskQueue, workflowId: `${taskQueue}-${i}`, args: [`${taskQueue}.gpu-${i % gpuQueues}`] });
    return nowMs() - t0;
  };
  return {
    once: one,
    rate: async (concurrency, ms) => {
      const end = Date.now() + ms;
      let done = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (Date.now() < end) {
            await one();
            if (Date.now() <= end) done++;
          }
        }),
      );
      return done / (ms / 1000);
    },
  };
}
