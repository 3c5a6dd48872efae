/**
 * The `render` workflow's status query, signals and failure classification of an attempt (kept apart from
 * render.ts so the front can import the definitions without the workflow body).
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure, defineQuery, defineSignal } from '@temporalio/workflow';
import type { PartialItem } from '../render/types.ts';
import { NON_RETRYABLE_TYPES } from './failure-types.ts';

/** One runPrompt attempt as the status query reports it (history has the full failure). */
export interface PromptAttempt {
  item: number;
  attempt: number;
  outcome: 'completed' | 'failed';
  promptId?: string;
  /** Backend the attempt ran on, when known. */
  backend?: string;
  /** Failure type (ComfyStall, ComfyPromptLost, Timeout, WorkerShutdown, ...) and message. */
  type?: string;
  message?: string;
}

export interface RenderStatus {
  /** `waiting`: an item's prompt is in the shared GPU queue or running (progress comes from its heartbeats). */
  stage: 'waiting' | 'done';
  item: number;
  items: number;
  backend?: string;
  promptIds: string[];
  attempts: PromptAttempt[];
  /** Set once `/sdapi/v1/interrupt` stopped the render: it ends with the images finished so far. */
  interrupted?: boolean;
  /** Items `/sdapi/v1/skip` ended early (those in `partial` answer with their partial image). */
  skipped?: number[];
  /** Items stopped by interrupt or skip that answer with their last preview (not a finished image). */
  partial?: PartialItem[];
}

export const renderStatusQuery = defineQuery<RenderStatus>('status');
/** A1111 interrupt: stop the current item and end the render with the images finished so far. */
export const interruptSignal = defineSignal('interrupt');
/** A1111 skip: end the current item of the batch and go on with the next. */
export const skipSignal = defineSignal('skip');

/** How long an attempt may wait for a GPU slot before it counts as failed (queue unserved). */
export const GPU_QUEUE_WAIT_MS = 60 * 60_000;

export interface FailureSummary {
  type: string;
  message: string;
  retryable: boolean;
  retryAfterMs?: number;
  /** The backend the attempt ran on: from the failure's details, or the last heartbeat of a timed-out one. */
  backend?: string;
}

export function describeFailure(err: unknown): FailureSummary {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const type = cause.type ?? 'Error';
    const d = cause.details?.[0];
    const retryAfter = d && typeof d === 'object' ? (d as { retryAfterMs?: unknown }).retryAfterMs : undefined;
    const r: FailureSummary = {
      type,
      message: cause.message,
      retryable: !cause.nonRetryable && !NON_RETRYABLE_TYPES.includes(type),
    };
    if (typeof retryAfter === 'number' && retryAfter > 0) r.retryAfterMs = retryAfter;
    const backend = d && typeof d === 'object' ? (d as { backend?: unknown }).backend : undefined;
    if (typeof backend === 'string' && backend !== '') r.backend = backend;
    return r;
  }
  if (cause instanceof TimeoutFailure) {
    // Heartbeat timeout: the worker died mid-prompt. The next attempt re-attaches to the prompt it left.
    const beat = cause.lastHeartbeatDetails as { backend?: unknown } | undefined;
    const r: FailureSummary = { type: `Timeout:${cause.timeoutType ?? 'unknown'}`, message: cause.message, retryable: true };
    if (beat && typeof beat.backend === 'string' && beat.backend !== '') r.backend = beat.backend;
    return r;
  }
  if (cause instanceof CancelledFailure) {
    // Not a cancellation of the render (checked before): a worker shut down and handed the attempt back.
    return { type: 'WorkerShutdown', message: cause.message, retryable: true };
  }
  const e = cause instanceof Error ? cause : new Error(String(cause));
  return { type: e.name || 'Error', message: e.message, retryable: true };
}
