/**
 * Temporal failures (proto) → `FailureView`, and the one-line reason operators read in listings. Stack
 * traces are dropped: they point into our code, not at what went wrong in ComfyUI.
 */
import type { PayloadConverter } from '@temporalio/common';
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';
import type { temporal as T } from '@temporalio/proto';
import type { FailureView } from './types.ts';

const { temporal } = proto;

/** `RETRY_STATE_NON_RETRYABLE_FAILURE` → `NON_RETRYABLE_FAILURE`; accepts numbers (proto) or names (JSON). */
export function enumName(enumObj: Record<string | number, string | number>, value: unknown, prefix: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  const name = typeof value === 'number' ? enumObj[value] : value;
  if (typeof name !== 'string' || name.endsWith('_UNSPECIFIED')) return undefined;
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

export function decodePayload(converter: PayloadConverter, payload: T.api.common.v1.IPayload | null | undefined): unknown {
  if (!payload) return undefined;
  try {
    return converter.fromPayload(payload);
  } catch {
    // A payload this code cannot read (another converter, binary): say so rather than failing the view.
    return { undecodable: true, size: payload.data?.length ?? 0 };
  }
}

export function decodeFirst(converter: PayloadConverter, payloads: T.api.common.v1.IPayloads | null | undefined): unknown {
  return decodePayload(converter, payloads?.payloads?.[0]);
}

export function failureView(converter: PayloadConverter, f: T.api.failure.v1.IFailure | null | undefined): FailureView | undefined {
  if (!f) return undefined;
  const view: FailureView = { message: f.message ?? '' };
  if (f.applicationFailureInfo) {
    view.type = f.applicationFailureInfo.type || 'Error';
    if (f.applicationFailureInfo.nonRetryable) view.nonRetryable = true;
    const details = decodeFirst(converter, f.applicationFailureInfo.details);
    if (details !== undefined) view.details = details;
  } else if (f.timeoutFailureInfo) {
    view.type = 'Timeout';
    const t = enumName(temporal.api.enums.v1.TimeoutType, f.timeoutFailureInfo.timeoutType, 'TIMEOUT_TYPE_');
    if (t) view.timeoutType = t;
    const details = decodeFirst(converter, f.timeoutFailureInfo.lastHeartbeatDetails);
    if (details !== undefined) view.details = { lastHeartbeat: details };
  } else if (f.canceledFailureInfo) {
    view.type = 'Cancelled';
  } else if (f.terminatedFailureInfo) {
    view.type = 'Terminated';
  } else if (f.serverFailureInfo) {
    view.type = 'ServerFailure';
    if (f.serverFailureInfo.nonRetryable) view.nonRetryable = true;
  } else if (f.activityFailureInfo) {
    view.type = 'ActivityFailure';
    view.activityType = f.activityFailureInfo.activityType?.name ?? undefined;
    const rs = enumName(temporal.api.enums.v1.RetryState, f.activityFailureInfo.retryState, 'RETRY_STATE_');
    if (rs) view.retryState = rs;
  } else if (f.childWorkflowExecutionFailureInfo) {
    view.type = 'ChildWorkflowFailure';
  }
  const cause = failureView(converter, f.cause);
  if (cause) view.cause = cause;
  return view;
}

/** The innermost failure: the one that says what actually happened (ComfyUI's error, a timeout). */
export function rootCause(view: FailureView): FailureView {
  let v = view;
  while (v.cause) v = v.cause;
  return v;
}

const WRAPPERS = new Set(['ActivityFailure', 'ChildWorkflowFailure']);

/**
 * One line saying why: the outermost failure that is not a mere wrapper ("Activity task failed"), prefixed
 * with the activity it came from, e.g. `runPrompt: ComfyExecution: ComfyUI node sampler (KSampler) failed: …`
 * or `RenderAttemptsExhausted: item 0 did not render within 4 attempts; last attempt: ComfyStall: …`.
 */
export function failureReason(view: FailureView): string {
  let activity: string | undefined;
  let v: FailureView = view;
  while (v.type !== undefined && WRAPPERS.has(v.type) && v.cause) {
    if (v.activityType) activity = v.activityType;
    v = v.cause;
  }
  const kind = v.type === 'Timeout' && v.timeoutType ? `Timeout (${v.timeoutType.toLowerCase().replaceAll('_', '-')})` : v.type;
  const text = [kind, v.message].filter((s) => s && s.length > 0).join(': ');
  return activity ? `${activity}: ${text}` : text;
}

/**
 * The class of failure (ComfyExecution, ComfyStall, Timeout, Terminated, …): the innermost failure that says
 * what happened, through the activity wrappers and the workflow's gave-up failure (RenderAttemptsExhausted),
 * whose cause is the last attempt's failure.
 */
export function failureClass(view: FailureView): string {
  let v: FailureView = view;
  while (v.cause && v.type !== undefined && (WRAPPERS.has(v.type) || v.type === GAVE_UP)) v = v.cause;
  return v.type ?? 'Error';
}

const GAVE_UP = 'RenderAttemptsExhausted';
