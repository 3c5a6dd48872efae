/**
 * The `render` workflow. New renders bind their prompts late (render-late-bound.ts: graph built by a local
 * activity, then one GPU activity per attempt on the shared GPU queue). Renders started before that change
 * carry no patch marker in their history and replay the shape they began with (render-legacy.ts).
 */
import { patched, setHandler } from '@temporalio/workflow';
import type { BuiltRender } from '../activities/types.ts';
import type { RenderRequest, RenderResult } from '../render/types.ts';
import { renderLateBound } from './render-late-bound.ts';
import { renderLegacy } from './render-legacy.ts';
import { renderStatusQuery, type RenderStatus } from './render-common.ts';

export { interruptSignal, renderStatusQuery, skipSignal, type PromptAttempt, type RenderStatus } from './render-common.ts';

/** Patch id of the late-bound shape (remove the legacy branch with `deprecatePatch` once no old render runs). */
export const LATE_BOUND_PATCH = 'late-bound-gpu-queue';

/**
 * `built`: the graphs and limits, when the front built them (`start` mode, activities/build-graph.ts
 * buildRender); they are then in history as the workflow's input, and the render runs no buildGraph local
 * activity. Without it (an `api` front, operator replays, renders started before) the workflow builds them.
 */
export async function render(request: RenderRequest, built?: BuiltRender): Promise<RenderResult> {
  const status: RenderStatus = { stage: 'building', item: 0, items: request.batchSize * request.nIter, promptIds: [], attempts: [] };
  setHandler(renderStatusQuery, () => status);
  if (patched(LATE_BOUND_PATCH)) return renderLateBound(request, status, built);
  return renderLegacy(request, status);
}
