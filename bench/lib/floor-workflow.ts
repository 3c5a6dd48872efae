/**
 * The `render` workflow's shapes with no work in them, for the "Temporal floor" baselines (bench/lib/floor.ts):
 * - `floorRender`: the late-bound shape: one activity on the shared single-slot-per-GPU queue (upload +
 *   prompt + outputs), the graph built by the front (`start` mode); with `localBuild`, a local activity
 *   builds it first (an `api` front);
 * - `floorRenderLegacy`: the shape before it: build graph → choose backend → run prompt on a per-backend
 *   queue → collect outputs, four activity round trips.
 * What the orchestration alone costs on this machine; bundled by the bench's own worker.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

export interface FloorActivities {
  noop(stage: string): Promise<string>;
}

export async function floorRender(gpuTaskQueue: string, localBuild = false): Promise<number> {
  if (localBuild) await proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '1 minute' }).noop('buildGraph');
  await proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute', taskQueue: gpuTaskQueue }).noop('runPrompt');
  return 1;
}

export async function floorRenderLegacy(gpuTaskQueue: string): Promise<number> {
  const io = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });
  const gpu = proxyActivities<FloorActivities>({ startToCloseTimeout: '1 minute', taskQueue: gpuTaskQueue });
  await io.noop('buildGraph');
  await io.noop('chooseBackend');
  await gpu.noop('runPrompt');
  await io.noop('collectOutputs');
  return 1;
}
