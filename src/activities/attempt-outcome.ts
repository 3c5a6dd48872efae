/** How an attempt ended, as the metrics label and the cancellation reason the logs and metrics use. */
import { ApplicationFailure } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { isComfyError } from '../comfyui/errors.ts';
import { RetryableFailureType } from '../contracts/failures.ts';

/** `CancelledFailure.message` is the SDK's reason: CANCELLED, WORKER_SHUTDOWN, TIMED_OUT, NOT_FOUND, ... */
export function cancelReason(reason: unknown): string | undefined {
  return reason instanceof CancelledFailure ? reason.message : undefined;
}

export function outcomeLabel(err: unknown): string {
  if (!isComfyError(err)) {
    return err instanceof ApplicationFailure && err.type === RetryableFailureType.BackendUnhealthy ? 'backend_unhealthy' : 'error';
  }
  switch (err.type) {
    case 'ComfyStall':
      return 'stall';
    case 'ComfyPromptLost':
      return 'lost';
    case 'ComfyOutOfMemory':
      return 'oom';
    case 'ComfyExecution':
      return 'execution_error';
    case 'ComfyValidation':
      return 'validation';
    case 'ComfyUnavailable':
    case 'ComfyProtocol':
      return 'unavailable';
    case 'ComfyInterrupted':
      return 'interrupted';
    default:
      return 'error';
  }
}
