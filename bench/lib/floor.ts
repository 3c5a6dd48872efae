/**
 * "Temporal floor": the render workflow's shape with no-op activities, run by workers in the bench process
 * against the same dev server. A baseline from the same run: what Temporal round trips alone cost on this
 * machine right now. `late-bound` (today's shape): a local activity, then one activity on ONE shared GPU
 * queue polled by `gpus` single-slot workers. `legacy`: 4 activities, one on a per-backend queue.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { BenchContext } from './context.ts';
import type { Cleanups } from './stack.ts';
import { steadyLoad, type SteadyLoad } from './closed-loop.ts';
import { nowMs } from './report.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
let runtimeInstalled = false;

export interface Floor {
  /** One floor render, client start → result, in ms. */
  once(): Promise<number>;
  /**
   * One floor render, also timing its tail: from the moment its GPU-queue activity returned (the point at
   * which a real render has its outputs stored) to the client holding the result. What Temporal alone
   * costs of the result latency (bench/latency.ts), whatever the front and the activity do.
   */
  tail(): Promise<{ total: number; tail: number }>;
  /** Closed-loop floor renders in steady state (lib/closed-loop.ts), with `sample()` at the window's ends. */
  load<S>(opts: { concurrency: number; warmMs: number; windowMs: number; sample: () => S }): Promise<SteadyLoad<S>>;
}

export type FloorShape = 'late-bound' | 'legacy';

export async function startFloor(cleanups: Cleanups, address: string, client: Client, gpuQueues = 1, shape: FloorShape = 'late-bound'): Promise<Floor> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
    runtimeInstalled = true;
  }
  const taskQueue = `bench-floor-${Math.random().toString(36).slice(2, 8)}`;
  const connection = await NativeConnection.connect({ address });
  /** When the GPU-queue no-op of each floor render returned (epoch ms, this process's clock). */
  const gpuReturned = new Map<string, number>();
  const activities = {
    noop: async (stage: string) => {
      if (stage === 'runPrompt') {
        const id = Context.current().info.workflowExecution?.workflowId;
        if (id) gpuReturned.set(id, nowMs());
      }
      return stage;
    },
  };
  const general = await Worker.create({ connection, taskQueue, workflowsPath: path.join(here, 'floor-workflow.ts'), activities });
  // Late-bound: ONE worker on the shared GPU queue with a slot per GPU (as a GPU worker process has; the SDK
  // allows one worker per queue and process). Legacy: a single-slot worker per backend queue.
  const gpus =
    shape === 'legacy'
      ? await Promise.all(
          Array.from({ length: gpuQueues }, (_, i) =>
            Worker.create({ connection, taskQueue: `${taskQueue}.gpu-${i}`, activities, maxConcurrentActivityTaskExecutions: 1 }),
          ),
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
  const run = async (): Promise<{ total: number; tail: number }> => {
    const i = seq++;
    const t0 = nowMs();
    const gpuQueue = shape === 'legacy' ? `${taskQueue}.gpu-${i % gpuQueues}` : `${taskQueue}-gpu`;
    const workflowId = `${taskQueue}-${i}`;
    await client.workflow.execute(shape === 'legacy' ? 'floorRenderLegacy' : 'floorRender', { taskQueue, workflowId, args: [gpuQueue] });
    const t1 = nowMs();
    const returned = gpuReturned.get(workflowId);
    gpuReturned.delete(workflowId);
    return { total: t1 - t0, tail: returned === undefined ? NaN : t1 - returned };
  };
  const one = async (): Promise<number> => (await run()).total;
  return {
    once: one,
    tail: run,
    load: (opts) => steadyLoad({ ...opts, one }),
  };
}

/** The late-bound floor of one run, started once and shared by the overhead and latency benchmarks. */
export function sharedFloor(ctx: BenchContext, address: string, client: Client): Promise<Floor> {
  return ctx.lazy('floor', () => startFloor(ctx.cleanups, address, client));
}
