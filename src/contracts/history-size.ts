/**
 * Temporal refuses any payload over 2 MB (its default blob size limit), and a workflow task whose command
 * carries one fails and is retried forever: the render never ends and holds its admission slot. A render's
 * workflow input (the request and, built, one ComfyUI graph per output item) is therefore measured as the
 * default JSON payload converter will serialise it, against a limit with a margin for the payload envelope
 * and the other attributes of the same event.
 */
import type { RenderRequest } from './render.ts';

/** The client's names of the fields a refusal may name (a protocol's own, from its neutral request). */
export interface SizeFieldNames {
  batchSize: string;
  nIter: string;
  prompt: string;
}

/** Without a protocol's names (an operator's replay): the A1111 fields a `RenderRequest` mirrors. */
const DEFAULT_NAMES: SizeFieldNames = { batchSize: 'batch_size', nIter: 'n_iter', prompt: 'prompt' };

/** What a render's workflow input (or the built render recorded in history) may weigh. */
export const MAX_HISTORY_PAYLOAD_BYTES = 1_500_000;

export interface OversizedRender {
  bytes: number;
  limit: number;
  items: number;
  /** The request field to name: the image count when one image would fit, else the prompt. */
  field: string;
  message: string;
}

/** Bytes of `value` as JSON (what the default payload converter stores). */
export function payloadBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/** Undefined when `request` and its built form fit; otherwise what is too large, for a 4xx or a failure. */
export function oversizedRender(
  request: RenderRequest,
  built: { plan: { items: readonly unknown[] } } | undefined,
  limit = MAX_HISTORY_PAYLOAD_BYTES,
  names: SizeFieldNames = DEFAULT_NAMES,
): OversizedRender | undefined {
  const requestBytes = payloadBytes(request);
  const builtBytes = built ? payloadBytes(built) : 0;
  const bytes = requestBytes + builtBytes;
  if (bytes <= limit) return undefined;
  const items = built?.plan.items.length ?? 1;
  const perItem = built && items > 0 ? builtBytes / items : bytes;
  const fewerItems = items > 1 && requestBytes + perItem <= limit;
  const field = fewerItems ? (request.nIter > 1 ? names.nIter : names.batchSize) : names.prompt;
  const message =
    `${field}: the render is too large to run durably: ${items} image(s) of ~${Math.ceil(perItem / 1024)} KB of ComfyUI graph each ` +
    `make ${(bytes / 1_000_000).toFixed(1)} MB, over the ${(limit / 1_000_000).toFixed(1)} MB a workflow input may hold; ` +
    (fewerItems ? 'ask for fewer images per request' : 'shorten the prompt (fewer LoRA tags)');
  return { bytes, limit, items, field, message };
}
