/**
 * A render's webhook as operators see it (`renders show`, GET /renders/{id}): read from the `webhook` child
 * workflow's own history, so it needs no running worker: delivered (with the receiver's status), failing (the
 * last status or error, and when the next try is due), or given up. A pure function of the history.
 */
import type { PayloadConverter } from '@temporalio/common';
import type { temporal as T } from '@temporalio/proto';
import { decodeFirst, failureView } from './failure.ts';
import type { FailureView, WebhookView } from './types.ts';

type History = T.api.history.v1.IHistory;

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
/** Seconds come as a Long from gRPC but as a plain number from `historyFromJSON`: accept both. */
type Seconds = { seconds?: { toString(): string } | number | null; nanos?: number | null };
const ms = (ts: Seconds | null | undefined): number | undefined =>
  ts && ts.seconds !== null && ts.seconds !== undefined ? Number(ts.seconds.toString()) * 1_000 + Math.floor((ts.nanos ?? 0) / 1_000_000) : undefined;
const durationMs = (d: Seconds | null | undefined): number => ms(d) ?? 0;

/** What the render's history says: the child it started for its webhook and the delivery it handed over. */
export function webhookStarted(a: T.api.history.v1.IStartChildWorkflowExecutionInitiatedEventAttributes, converter: PayloadConverter): WebhookView | undefined {
  if (a.workflowType?.name !== 'webhook' || !a.workflowId) return undefined;
  const d = obj(decodeFirst(converter, a.input));
  const view: WebhookView = { workflowId: a.workflowId, state: 'pending', attempts: 0 };
  const webhookId = str(d.webhookId);
  const url = str(d.url);
  const type = str(d.type);
  if (webhookId) view.webhookId = webhookId;
  if (url) view.url = url;
  if (type) view.type = type;
  const max = obj(d.limits).maxAttempts;
  if (typeof max === 'number') view.maxAttempts = max;
  return view;
}

/** The delivery's state from the `webhook` workflow's history. */
export function webhookFromHistory(started: WebhookView, history: History, converter: PayloadConverter): WebhookView {
  const view: WebhookView = { ...started };
  const tries = new Map<number, true>();
  for (const ev of history.events ?? []) {
    const at = ms(ev.eventTime);
    if (ev.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverWebhook') {
      tries.set(Number(ev.eventId ?? 0), true);
      view.attempts = tries.size;
      if (view.state === 'pending') view.state = 'delivering';
      delete view.nextAttemptAt;
    } else if (ev.activityTaskCompletedEventAttributes) {
      const r = obj(decodeFirst(converter, ev.activityTaskCompletedEventAttributes.result));
      if (typeof r.status === 'number') view.lastStatus = r.status;
      delete view.lastError;
    } else if (ev.activityTaskFailedEventAttributes || ev.activityTaskTimedOutEventAttributes) {
      const f = failureView(converter, (ev.activityTaskFailedEventAttributes ?? ev.activityTaskTimedOutEventAttributes)!.failure);
      view.state = 'failing';
      noteFailure(view, f);
    } else if (ev.timerStartedEventAttributes && at !== undefined) {
      view.nextAttemptAt = new Date(at + durationMs(ev.timerStartedEventAttributes.startToFireTimeout)).toISOString();
    } else if (ev.workflowExecutionCompletedEventAttributes) {
      const r = obj(decodeFirst(converter, ev.workflowExecutionCompletedEventAttributes.result));
      view.state = 'delivered';
      if (typeof r.attempts === 'number') view.attempts = r.attempts;
      if (typeof r.status === 'number') view.lastStatus = r.status;
      view.deliveredAt = str(r.deliveredAt) ?? (at !== undefined ? new Date(at).toISOString() : undefined);
    } else if (ev.workflowExecutionFailedEventAttributes || ev.workflowExecutionTerminatedEventAttributes || ev.workflowExecutionTimedOutEventAttributes) {
      view.state = 'gave-up';
      delete view.nextAttemptAt;
      if (ev.workflowExecutionTerminatedEventAttributes) view.lastError = `terminated: ${ev.workflowExecutionTerminatedEventAttributes.reason ?? ''}`.trim();
    }
  }
  return view;
}

function noteFailure(view: WebhookView, f: FailureView | undefined): void {
  // An activity failure wraps the try's own (WebhookRejected with the status, WebhookUnreachable, a timeout).
  const inner = f?.cause ?? f;
  view.lastError = `${inner?.type ?? 'Error'}: ${inner?.message ?? ''}`;
  const status = obj(inner?.details).status;
  if (typeof status === 'number') view.lastStatus = status;
  else delete view.lastStatus;
}
