/**
 * The event a render's webhook carries, shaped like OpenAI's webhook events (`{object: "event", id, type,
 * created_at, data}`) with the Standard Webhooks `timestamp` field beside them. It names the render and where
 * to fetch its outputs; it never carries their bytes. Pure and deterministic: the render workflow builds it.
 */
import type { BlobRef } from '../contracts/render.ts';
import type { WebhookTarget } from '../contracts/webhooks.ts';

export interface RenderEnd {
  renderId: string;
  /** Unique per render run (the workflow's run id): the event id and the `webhook-id` derive from it. */
  runId: string;
  model: string;
  kind: string;
  /** When the render ended (workflow time), ms. */
  endedAtMs: number;
  outputs?: BlobRef[];
  error?: { type: string; message: string };
}

/** Longest error message an event carries (ComfyUI tracebacks can be long; the render's history has all of it). */
const MAX_ERROR_CHARS = 2_000;

const hex = (runId: string): string => runId.replace(/[^0-9a-zA-Z]/g, '');

/** `webhook-id` of a render run's event: the same on every try. */
export function webhookIdFor(runId: string): string {
  return `msg_${hex(runId)}`;
}

export function webhookEvent(target: WebhookTarget, end: RenderEnd): { type: string; body: string } {
  const failed = end.error !== undefined;
  const type = `${target.family}.${failed ? 'failed' : 'completed'}`;
  const link = (p: string): string => (target.baseUrl ? `${target.baseUrl}${p}` : p);
  const outputs = (end.outputs ?? []).map((o, index) => ({
    index,
    url: link(`/renders/${encodeURIComponent(end.renderId)}/outputs/${index}`),
    mime: o.mime,
    size: o.size,
    sha256: o.sha256,
    ...(o.width !== undefined ? { width: o.width } : {}),
    ...(o.height !== undefined ? { height: o.height } : {}),
  }));
  const data = {
    id: end.renderId,
    render_id: end.renderId,
    status: failed ? 'failed' : 'completed',
    model: end.model,
    kind: end.kind,
    ...(target.resultPath && !failed ? { url: link(target.resultPath) } : {}),
    outputs,
    ...(end.error ? { error: { type: end.error.type, message: end.error.message.slice(0, MAX_ERROR_CHARS) } } : {}),
    ...target.data,
  };
  const body = {
    object: 'event',
    id: `evt_${hex(end.runId)}`,
    type,
    created_at: Math.floor(end.endedAtMs / 1000),
    timestamp: new Date(end.endedAtMs).toISOString(),
    data,
  };
  return { type, body: JSON.stringify(body) };
}
