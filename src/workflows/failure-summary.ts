/**
 * How the `render` and `webhook` workflows read an attempt's failure: its type, whether a later attempt may
 * fix it, how long it asks to wait, and where its prompt may still run.
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import { NON_RETRYABLE_TYPES } from '../contracts/failures.ts';

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
