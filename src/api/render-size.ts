/**
 * The front's half of the workflow payload limit (render/history-size.ts): a render whose input would not
 * fit in Temporal's history is refused before it starts, with a 4xx naming the field to change.
 */
import { ApplicationFailure } from '@temporalio/common';
import { buildRender } from '../activities/build-graph.ts';
import type { BuiltRender } from '../activities/types.ts';
import { oversizedRender } from '../render/history-size.ts';
import type { RenderRequest } from '../render/types.ts';
import { RequestError } from './a1111/errors.ts';

/** Limits do not change the size that matters (the graphs): the defaults stand in for the worker's. */
const MEASURE_CONFIG = { STALL_TIMEOUT_MS: undefined, HEARTBEAT_TIMEOUT_MS: 30_000 };

/** Throws a 413 naming the field when `request` (built as `built`, or built here to measure) is too large. */
export function refuseOversizedRender(request: RenderRequest, renderId: string, built?: BuiltRender): void {
  let measured = built;
  if (!measured) {
    try {
      measured = buildRender(MEASURE_CONFIG, request, renderId);
    } catch (err) {
      const details = err instanceof ApplicationFailure ? (err.details?.[0] as { field?: unknown } | undefined) : undefined;
      if (typeof details?.field === 'string' && err instanceof Error) throw new RequestError(413, details.field, err.message);
      // Any other build failure is the workflow's to report, as before.
      return;
    }
  }
  const oversized = oversizedRender(request, measured);
  if (oversized) throw new RequestError(413, oversized.field, oversized.message, { bytes: oversized.bytes, limit: oversized.limit });
}
