/**
 * Turns client errors into Temporal failures with a stable type, the retry decision (docs/durability.md), and
 * ComfyUI's own details (node, input, message) so history and the client both show the real reason.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isComfyError } from '../comfyui/errors.ts';

export function toFailure(err: unknown): unknown {
  if (err instanceof ApplicationFailure) return err;
  if (isComfyError(err)) {
    return ApplicationFailure.create({
      message: err.message,
      type: err.type,
      nonRetryable: !err.retryable,
      details: [err.details()],
    });
  }
  return err;
}

/** Names the backend in a failure's details, so the workflow knows where the attempt's prompt may live. */
export function withBackend(err: unknown, backendId: string): unknown {
  if (!(err instanceof ApplicationFailure)) return err;
  const d = err.details?.[0];
  if (d !== undefined && (typeof d !== 'object' || d === null || Array.isArray(d))) return err;
  return ApplicationFailure.create({
    message: err.message,
    ...(err.type ? { type: err.type } : {}),
    nonRetryable: err.nonRetryable ?? false,
    // Temporal's Duration type does not resolve here (its `ms` dependency's types sit outside that package's exports).
    // eslint-disable-next-line @typescript-eslint/no-unsafe-assignment -- a value copied from one failure to another
    ...(err.nextRetryDelay !== undefined ? { nextRetryDelay: err.nextRetryDelay } : {}),
    details: [{ ...(d as Record<string, unknown> | undefined), backend: backendId }, ...(err.details?.slice(1) ?? [])],
    ...(err.cause ? { cause: err.cause } : {}),
  });
}
