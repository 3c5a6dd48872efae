import { ApplicationFailure } from '@temporalio/common';
import { getProfile } from '../models/registry.ts';
import { planRender } from '../models/plan.ts';
import type { BuiltRender, RenderActivities } from './types.ts';
import type { Config } from '../config/config.ts';
import type { RenderRequest } from '../render/types.ts';
import type { ActivityDeps } from './index.ts';
import { MAX_PROMPT_ATTEMPTS } from '../workflows/attempts.ts';
import { FailureType } from '../workflows/failure-types.ts';
import { oversizedRender } from '../render/history-size.ts';

/** Profile + request → one ComfyUI graph per output item; the result is recorded in history. */
export function createBuildGraph(deps: ActivityDeps): RenderActivities['buildGraph'] {
  return async ({ request, renderId }) => buildRender(deps.config, request, renderId);
}

/**
 * The graphs and limits of a render: pure, so the front of a `start` process (same configuration as its
 * worker) builds them before the start and hands them over in the workflow input, which saves the render
 * the local activity's round trips (RenderService `prebuild`). Throws the ApplicationFailure the activity
 * fails with.
 */
export function buildRender(config: Pick<Config, 'STALL_TIMEOUT_MS' | 'HEARTBEAT_TIMEOUT_MS'>, request: RenderRequest, renderId: string): BuiltRender {
  const profile = getProfile(request.model);
  if (!profile) throw ApplicationFailure.nonRetryable(`unknown model ${request.model}`, FailureType.InvalidRender);
  let plan;
  try {
    plan = planRender(request, { renderId });
  } catch (err) {
    // The builders are pure: an error here (a file role the profile lacks, a kind the family cannot build)
    // fails the same way on every retry.
    throw ApplicationFailure.nonRetryable(`cannot build the graph: ${(err as Error).message}`, FailureType.InvalidRender);
  }
  const built: BuiltRender = {
    plan,
    limits: {
      stallTimeoutMs: config.STALL_TIMEOUT_MS ?? profile.stallTimeoutMs,
      deadlineMs: profile.deadlineMs,
      heartbeatTimeoutMs: config.HEARTBEAT_TIMEOUT_MS,
      maxAttempts: MAX_PROMPT_ATTEMPTS,
    },
  };
  // Recorded in history (input or local activity result): over Temporal's payload limit, the workflow task
  // would fail and be retried forever. Fail the render instead (the front refuses such requests up front).
  const oversized = oversizedRender(request, built);
  if (oversized) throw ApplicationFailure.nonRetryable(oversized.message, FailureType.InvalidRender, { field: oversized.field, bytes: oversized.bytes });
  return built;
}
