/**
 * The class of failure a render ended with, as the front reports it (render-service classifyFailure) and the
 * `RenderOutcome` search attribute and the metrics name it: Cancelled, Timeout, ComfyExecution, ComfyStall, …
 * (through the activity and gave-up wrappers to what actually happened). Deterministic: reads the error only.
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import { GaveUpFailureType } from '../contracts/failures.ts';

export function outcomeReason(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && e; depth++) {
    if (e instanceof CancelledFailure) return 'Cancelled';
    if (e instanceof TimeoutFailure) return 'Timeout';
    if (e instanceof ApplicationFailure && e.type !== GaveUpFailureType) return e.type ?? 'Error';
    if (e instanceof ActivityFailure || (e instanceof ApplicationFailure && e.type === GaveUpFailureType)) {
      e = (e as Error).cause;
      continue;
    }
    break;
  }
  return 'Error';
}
