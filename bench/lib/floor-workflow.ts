/**
 * The `render` workflow's shape with no work in it: the same sequence of activity round trips (three on the
 * general queue, one on a single-slot "GPU" queue) as build graph → choose backend → run prompt → collect.
 * What the orchestration alone costs on this machine; bundled by the bench's own worker (bench/lib/floor.ts).
 */
import { proxyActivities } from '@temporalio/workflow';

export interface FloorActivities {
  noop(stage: string): Promise<string>;
}

export async function floorRender(gpuTaskQueue: string): Promise<number> {
  const io = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });
  const gpu = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute', taskQueue: gpuTaskQueue });
  await io.noop('buildGraph');
  await io.noop('chooseBackend');
  await gpu.noop('runPrompt');
  await io.noop('collectOutputs');
  return 1;
}
