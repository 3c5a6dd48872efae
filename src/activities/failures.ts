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
