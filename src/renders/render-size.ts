/**
 * The submitter's half of the workflow payload limit (contracts/history-size.ts): a render whose input would not
 * fit in Temporal's history is refused before anything is stored or started, with a 413 naming the field to
 * change, in the client's words.
 */
import type { BuiltRender } from '../contracts/activities.ts';
import { RequestError } from '../errors/request-error.ts';
import { MAX_HISTORY_PAYLOAD_BYTES, oversizedRender, type SizeFieldNames } from '../contracts/history-size.ts';
import type { RenderRequest } from '../contracts/render.ts';

/** Throws a 413 naming the field when `request`, built as `built`, is too large for the workflow input. */
export function refuseOversizedRender(request: RenderRequest, built: BuiltRender, names?: SizeFieldNames): void {
  const oversized = oversizedRender(request, built, MAX_HISTORY_PAYLOAD_BYTES, names);
  if (oversized) throw new RequestError(413, oversized.field, oversized.message, { bytes: oversized.bytes, limit: oversized.limit });
}
