/**
 * "Temporal floor": the render workflow's shape with no-op activities, run by workers in the bench process
 * against the same dev server. A baseline from the same run: what Temporal round trips alone cost on this
 * machine right now. `late-bound` (today's shape): a local activity, then one activity on ONE shared GPU
 * queue polled by `gpus` single-slot workers. `legacy`: 4 activities, one on a per-backend queue.
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

export type FloorShape = 'late-bound' | 'legacy';

export async function startFloor(cleanups: Cleanups, address: string, client: Client, gpuQueues = 1, shape: FloorShape = 'late-bound'): Promise<Floor> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  const taskQueue = `bench-floor-${Math.random().toString(36).slice(2, 8)}`;
  const connection = await NativeConnection.connect({ address });
  const activities = { noop: async (stage: string) => stage };
  const general = await Worker.create({ connection, taskQueue, workflowsPath: path.join(here, 'floor-workflow.ts'), activities });
  // Late-bound: ONE worker on the shared GPU queue with a slot per GPU (as a GPU worker process has; the SDK
  // allows one worker per queue and process). Legacy: a single-slot worker per backend queue.
  const gpus =
    shape === 'legacy'
      ? await Promise.all(
          Array.from({ length: gpuQueues }, (_, i) => Worker.create({ connection, taskQueue: `${taskQueue}.gpu-${i}`, activities, maxConcurrentActivityTaskExecutions: 1 })),
        )
      : [await Worker.create({ connection, taskQueue: `${taskQueue}-gpu`, activities, maxConcurrentActivityTaskExecutions: gpuQueues })];
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
    const gpuQueue = shape === 'legacy' ? `${taskQueue}.gpu-${i % gpuQueues}` : `${taskQueue}-gpu`;
    await client.workflow.execute(shape === 'legacy' ? 'floorRenderLegacy' : 'floorRender', { taskQueue, workflowId: `${taskQueue}-${i}`, args: [gpuQueue] });
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
