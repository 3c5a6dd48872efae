/**
 * The graphs and limits of a render, built by whoever submits it (the front, an operator replay) before the
 * workflow starts: they are the workflow's second argument, so history holds the exact graphs from the
 * start and the workflow itself runs no build step. Pure: the same request and configuration give the same
 * graphs (the render id only names the uploads' subfolder).
 */
import type { BuiltRender } from '../contracts/activities.ts';
import type { Config } from '../config/config.ts';
import { getProfile } from '../models/registry.ts';
import { planRender } from '../models/plan.ts';
import { VIDEO_STALL_TIMEOUT_MS } from '../models/profile.ts';
import { planPrompt } from './prompt-plan.ts';
import type { RenderRequest } from '../contracts/render.ts';
import { ATTEMPT_BACKOFF_INITIAL_MS, ATTEMPT_BACKOFF_MAX_MS, MAX_PROMPT_ATTEMPTS, MIN_ATTEMPT_MS } from '../contracts/attempts.ts';

/** The request cannot be built into graphs (unknown model, a file role the profile lacks, ...): retrying cannot help. */
export class RenderBuildError extends Error {
  override name = 'RenderBuildError';
}

/**
 * A client's own graph may load any model, image or video: the longest silence and deadline of any profile
 * (a video model loading, a two-hour video).
 */
const PROMPT_LIMITS = { stallTimeoutMs: VIDEO_STALL_TIMEOUT_MS, deadlineMs: 2 * 60 * 60_000 };

export function buildRender(config: Pick<Config, 'STALL_TIMEOUT_MS' | 'HEARTBEAT_TIMEOUT_MS'>, request: RenderRequest, renderId: string): BuiltRender {
  const profile = request.kind === 'prompt' ? PROMPT_LIMITS : getProfile(request.model);
  if (!profile) throw new RenderBuildError(`unknown model ${request.model}`);
  let plan;
  try {
    plan = request.kind === 'prompt' ? planPrompt(request, { renderId }) : planRender(request, { renderId });
  } catch (err) {
    throw new RenderBuildError(`cannot build the graph: ${(err as Error).message}`);
  }
  return {
    plan,
    limits: {
      stallTimeoutMs: config.STALL_TIMEOUT_MS ?? profile.stallTimeoutMs,
      deadlineMs: profile.deadlineMs,
      heartbeatTimeoutMs: config.HEARTBEAT_TIMEOUT_MS,
      maxAttempts: MAX_PROMPT_ATTEMPTS,
      backoffInitialMs: ATTEMPT_BACKOFF_INITIAL_MS,
      backoffMaxMs: ATTEMPT_BACKOFF_MAX_MS,
      minAttemptMs: MIN_ATTEMPT_MS,
    },
  };
}
