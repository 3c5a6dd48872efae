/**
 * Workflows of the hop probe (bench/hop-probe.ts): the smallest shapes whose latency adds up to a render's,
 * with no-op activities. Bundled by the probe's own worker.
 */
import { condition, defineUpdate, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export interface ProbeActivities {
  noop(stage: string): Promise<string>;
}

const opts = { startToCloseTimeout: '1 minute' } as const;

/** One workflow task, no activity. */
export async function probeEmpty(): Promise<number> {
  return 0;
}

/** One activity on the workflow's own queue (the SDK may dispatch it eagerly). */
export async function probeOneActivity(): Promise<number> {
  await proxyActivities<ProbeActivities>(opts).noop('same-queue');
  return 1;
}

/** One activity on another queue: what a GPU activity costs (never eager). */
export async function probeCrossQueue(otherQueue: string): Promise<number> {
  await proxyActivities<ProbeActivities>({ ...opts, taskQueue: otherQueue }).noop('cross-queue');
  return 1;
}

/** The collapsed render: a local activity (graph build) then one activity on the GPU queue. */
export async function probeRenderShape(otherQueue: string): Promise<number> {
  await proxyLocalActivities<ProbeActivities>(opts).noop('buildGraph');
  await proxyActivities<ProbeActivities>({ ...opts, taskQueue: otherQueue }).noop('renderAttempt');
  return 2;
}

/** The render before the collapse: build, choose, run on the GPU queue, collect. */
export async function probeOldShape(otherQueue: string): Promise<number> {
  const io = proxyActivities<ProbeActivities>(opts);
  await io.noop('buildGraph');
  await io.noop('chooseBackend');
  await proxyActivities<ProbeActivities>({ ...opts, taskQueue: otherQueue }).noop('runPrompt');
  await io.noop('collectOutputs');
  return 4;
}

/**
 * The whole attempt as a local activity in the first workflow task: the shape with the fewest server round
 * trips. Not the render's shape (docs/benchmarks.md: while a local activity runs, the workflow task stays
 * open, so status queries and interrupt signals wait for it, and a local activity cannot heartbeat), only
 * its floor, for comparison.
 */
export async function probeLocalOnly(): Promise<number> {
  await proxyLocalActivities<ProbeActivities>(opts).noop('runPromptHere');
  return 1;
}

/** The workflow's result, answered as an update (bench/completion-probe.ts). */
export const probeResultUpdate = defineUpdate<number>('result');

/**
 * One activity on another queue, whose result a client may also wait for through `probeResultUpdate`
 * (update-with-start): the update completes in the same workflow task that completes the workflow.
 */
export async function probeCrossQueueWithUpdate(otherQueue: string): Promise<number> {
  let done: number | undefined;
  setHandler(probeResultUpdate, async () => {
    await condition(() => done !== undefined);
    return done!;
  });
  await proxyActivities<ProbeActivities>({ ...opts, taskQueue: otherQueue }).noop('cross-queue');
  done = 1;
  return done;
}
