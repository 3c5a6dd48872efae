import { ApplicationFailure } from '@temporalio/common';
import { getProfile } from '../models/registry.ts';
import { planRender } from '../models/plan.ts';
import type { RenderActivities } from './types.ts';
import type { ActivityDeps } from './index.ts';
import { MAX_PROMPT_ATTEMPTS } from '../workflows/attempts.ts';
import { FailureType } from '../workflows/failure-types.ts';

/** Profile + request → one ComfyUI graph per output item; the result is recorded in history. */
export function createBuildGraph(deps: ActivityDeps): RenderActivities['buildGraph'] {
  return async ({ request, renderId }) => {
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
    return {
      plan,
      limits: {
        stallTimeoutMs: deps.config.STALL_TIMEOUT_MS ?? profile.stallTimeoutMs,
        deadlineMs: profile.deadlineMs,
        heartbeatTimeoutMs: deps.config.HEARTBEAT_TIMEOUT_MS,
        maxAttempts: MAX_PROMPT_ATTEMPTS,
      },
    };
  };
}
