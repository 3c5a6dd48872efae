/**
 * Workflow history → a render's timeline: each stage (activity) and each attempt with start, duration,
 * outcome and error; the resolved request; the ComfyUI graphs (built before the start: the input's second
 * argument, shown as a completed `buildGraph` stage); prompt ids; output
 * blob references; why it ended. A pure function of the history (and, for a running render, of
 * `describe()`'s pending activities), so it is unit-tested on recorded histories.
 *
 * Attempts come in two shapes, both shown as one stage with its attempts:
 * - the workflow retries a prompt itself: each attempt is its own activity (input `attempt`), with its own
 *   start, end and failure in history — every attempt is complete;
 * - Temporal retries an activity: history holds its schedule, then (only once it finishes) the *last*
 *   attempt's start, number and the previous attempt's failure. Earlier attempts are counted but their
 *   errors are not kept; the timeline says so instead of inventing them.
 * A running render's current attempt comes from `describe()`.
 */
import type { PayloadConverter } from '@temporalio/common';
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';
import type { google, temporal as T } from '@temporalio/proto';
import type { ComfyGraph } from '../comfyui/graph.ts';
import { outcomeOf, outputOutcomes } from '../contracts/outcome.ts';
import type { BlobRef, RenderRequest, RenderResult, StageTiming } from '../contracts/render.ts';
import { decodeFirst, decodePayload, enumName, failureClass, failureReason, failureView } from './failure.ts';
import type { AttemptView, FailureView, RenderStatusName, RenderTimeline, StageView } from './types.ts';
import { webhookStarted } from './webhook.ts';

const { temporal } = proto;
const PendingState = temporal.api.enums.v1.PendingActivityState;

type History = T.api.history.v1.IHistory;
type PendingActivity = T.api.workflow.v1.IPendingActivityInfo;

export interface LiveState {
  status?: RenderStatusName;
  pendingActivities?: PendingActivity[] | null;
}

const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());
/** Seconds come as a Long from gRPC but as a plain number from `historyFromJSON`: accept both. */
const ms = (ts: google.protobuf.ITimestamp | null | undefined): number | undefined => {
  if (!ts || ts.seconds === null || ts.seconds === undefined) return undefined;
  return Number(ts.seconds.toString()) * 1_000 + Math.floor((ts.nanos ?? 0) / 1_000_000);
};
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** `WorkflowExecutionStatusName` (`TIMED_OUT`) → operator spelling (`timed-out`). */
export function statusName(name: string | undefined): RenderStatusName {
  switch (name) {
    case 'RUNNING':
      return 'running';
    case 'COMPLETED':
      return 'completed';
    case 'FAILED':
      return 'failed';
    case 'CANCELLED':
    case 'CANCELED':
      return 'cancelled';
    case 'TERMINATED':
      return 'terminated';
    case 'TIMED_OUT':
      return 'timed-out';
    case 'CONTINUED_AS_NEW':
      return 'continued-as-new';
    default:
      return 'unknown';
  }
}

function attemptOutcome(f: FailureView | undefined): AttemptView['outcome'] {
  if (f?.type === 'Timeout') return 'timed-out';
  if (f?.type === 'Cancelled') return 'cancelled';
  return 'failed';
}

/** The prompt id a failed attempt names in its details (ComfyUI errors carry it). */
function promptIdOf(f: FailureView | undefined): string | undefined {
  for (let v = f; v; v = v.cause) {
    const d = obj(v.details);
    const id = str(d.promptId) ?? str(obj(d.lastHeartbeat).promptId);
    if (id) return id;
  }
  return undefined;
}

/** Attempts 1..n-1 of an activity whose attempt n started: only n-1's failure is known. */
function earlierAttempts(attempt: number, lastFailure: FailureView | undefined): AttemptView[] {
  const out: AttemptView[] = [];
  for (let a = 1; a < attempt; a++) {
    if (a === attempt - 1 && lastFailure) {
      const v: AttemptView = { attempt: a, outcome: attemptOutcome(lastFailure), error: lastFailure };
      const pid = promptIdOf(lastFailure);
      if (pid) v.promptId = pid;
      out.push(v);
    } else {
      out.push({ attempt: a, outcome: 'failed', note: 'earlier attempt: Temporal keeps only the last failure of a retried activity' });
    }
  }
  return out;
}

function stageName(activityType: string, input: Record<string, unknown>): { name: string; item?: number } {
  const item = num(input.item) ?? num(input.itemIndex);
  return item === undefined ? { name: activityType } : { name: `${activityType}[${item}]`, item };
}

function searchAttribute(converter: PayloadConverter, fields: Record<string, T.api.common.v1.IPayload> | null | undefined, key: string): string | undefined {
  const v = decodePayload(converter, fields?.[key]);
  // Keyword attributes may come back as a one-element list.
  return str(Array.isArray(v) ? v[0] : v);
}

// eslint-disable-next-line max-lines-per-function -- one pass over a render's history events, each case short; the cases share the timeline being built
export function buildTimeline(id: string, history: History, converter: PayloadConverter, live: LiveState = {}): RenderTimeline {
  const events = history.events ?? [];
  const tl: RenderTimeline = {
    id,
    status: live.status ?? 'running',
    memo: {},
    graphs: [],
    prompts: [],
    outputs: [],
    stages: [],
    workflowTaskFailures: [],
    historyEvents: events.length,
  };
  /** One entry per scheduled activity; several may share a stage (one per workflow-driven attempt). */
  const executions = new Map<number, Execution>();
  let closedStatus: RenderStatusName | undefined;
  let completedResult: Partial<RenderResult> | undefined;
  let startMs: number | undefined;
  let closeMs: number | undefined;
  const collectedOutputs: BlobRef[] = [];

  const finishAttempt = (ex: Execution, at: number | undefined, outcome: AttemptView['outcome'], error?: FailureView): void => {
    const { stage } = ex;
    let attempt = ex.current;
    if (!attempt) {
      // Ended without a recorded start (cancelled while scheduled, a schedule-to-start timeout).
      attempt = { attempt: ex.workflowAttempt ?? stage.attempts.length + 1, outcome };
      stage.attempts.push(attempt);
    }
    attempt.outcome = outcome;
    if (at !== undefined) {
      attempt.endedAt = iso(at);
      const started = attempt.startedAt ? Date.parse(attempt.startedAt) : undefined;
      if (started !== undefined) attempt.durationMs = at - started;
    }
    if (error) {
      attempt.error = error;
      const pid = promptIdOf(error);
      if (pid && !attempt.promptId) attempt.promptId = pid;
    }
    ex.current = undefined;
    ex.closed = true;
    stage.outcome = outcome === 'completed' ? 'completed' : outcome === 'running' || outcome === 'waiting' ? 'running' : outcome;
    stage.endedAt = iso(at);
    if (at !== undefined && stage.scheduledAt) stage.durationMs = at - Date.parse(stage.scheduledAt);
  };

  for (const ev of events) {
    const at = ms(ev.eventTime);
    const eventId = Number(ev.eventId ?? 0);

    if (ev.workflowExecutionStartedEventAttributes) {
      const a = ev.workflowExecutionStartedEventAttributes;
      startMs = at;
      tl.runId = a.originalExecutionRunId ?? undefined;
      tl.taskQueue = a.taskQueue?.name ?? undefined;
      tl.priority = a.priority?.priorityKey || 3;
      const request = decodeFirst(converter, a.input);
      if (request && typeof request === 'object') tl.request = request as RenderRequest;
      // The graphs the submitter built are the input's second argument: the buildGraph stage.
      const built = a.input?.payloads?.[1] ? obj(decodePayload(converter, a.input.payloads[1])) : {};
      if (built.plan) recordBuilt(tl, built, at, collectedOutputs);
      for (const [k, p] of Object.entries(a.memo?.fields ?? {})) tl.memo[k] = decodePayload(converter, p);
      const sa = a.searchAttributes?.indexedFields;
      tl.model = searchAttribute(converter, sa, 'RenderModel') ?? str(obj(tl.request).model);
      tl.kind = searchAttribute(converter, sa, 'RenderKind') ?? str(obj(tl.request).kind);
      tl.replayOf = searchAttribute(converter, sa, 'RenderReplayOf') ?? str(obj(tl.request).replayOf);
    } else if (ev.upsertWorkflowSearchAttributesEventAttributes) {
      const backend = searchAttribute(converter, ev.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields, 'RenderBackend');
      if (backend) tl.backend = backend;
    } else if (ev.activityTaskScheduledEventAttributes) {
      const a = ev.activityTaskScheduledEventAttributes;
      const activityType = a.activityType?.name ?? 'activity';
      const input = obj(decodeFirst(converter, a.input));
      const { name, item } = stageName(activityType, input);
      const workflowAttempt = num(input.attempt);
      // A workflow-driven retry of a stage that has not completed: another attempt of the same stage.
      let stage = workflowAttempt !== undefined ? tl.stages.findLast((s) => s.name === name && s.outcome !== 'completed') : undefined;
      if (!stage) {
        stage = { name, activityType, activityId: a.activityId ?? '', outcome: 'scheduled', attempts: [] };
        if (item !== undefined) stage.item = item;
        if (a.taskQueue?.name) stage.taskQueue = a.taskQueue.name;
        if (at !== undefined) stage.scheduledAt = iso(at);
        tl.stages.push(stage);
      } else {
        stage.outcome = 'scheduled';
        stage.activityId = a.activityId ?? stage.activityId;
        delete stage.error;
      }
      const max = a.retryPolicy?.maximumAttempts;
      if (max && max > 1) stage.maxAttempts = max;
      const ex: Execution = { stage, activityId: a.activityId ?? '', closed: false };
      if (workflowAttempt !== undefined) ex.workflowAttempt = workflowAttempt;
      executions.set(eventId, ex);
    } else if (ev.activityTaskStartedEventAttributes) {
      const a = ev.activityTaskStartedEventAttributes;
      const ex = executions.get(Number(a.scheduledEventId ?? 0));
      if (!ex) continue;
      const n = a.attempt ?? 1;
      if (ex.workflowAttempt === undefined) ex.stage.attempts.push(...earlierAttempts(n, failureView(converter, a.lastFailure)));
      const attempt: AttemptView = { attempt: ex.workflowAttempt ?? n, outcome: 'running' };
      if (at !== undefined) attempt.startedAt = iso(at);
      ex.stage.attempts.push(attempt);
      ex.current = attempt;
      ex.stage.outcome = 'running';
    } else if (ev.activityTaskCompletedEventAttributes) {
      const a = ev.activityTaskCompletedEventAttributes;
      const ex = executions.get(Number(a.scheduledEventId ?? 0));
      if (!ex) continue;
      finishAttempt(ex, at, 'completed');
      delete ex.stage.error;
      recordResult(tl, ex.stage, decodeFirst(converter, a.result), collectedOutputs);
    } else if (ev.activityTaskFailedEventAttributes) {
      const a = ev.activityTaskFailedEventAttributes;
      const ex = executions.get(Number(a.scheduledEventId ?? 0));
      if (!ex) continue;
      const error = failureView(converter, a.failure);
      finishAttempt(ex, at, 'failed', error);
      if (error) ex.stage.error = withRetryState(error, a.retryState);
    } else if (ev.activityTaskTimedOutEventAttributes) {
      const a = ev.activityTaskTimedOutEventAttributes;
      const ex = executions.get(Number(a.scheduledEventId ?? 0));
      if (!ex) continue;
      const error = failureView(converter, a.failure);
      finishAttempt(ex, at, 'timed-out', error);
      if (error) ex.stage.error = withRetryState(error, a.retryState);
    } else if (ev.activityTaskCancelRequestedEventAttributes) {
      const ex = executions.get(Number(ev.activityTaskCancelRequestedEventAttributes.scheduledEventId ?? 0));
      if (ex) ex.stage.cancelRequested = true;
    } else if (ev.activityTaskCanceledEventAttributes) {
      const ex = executions.get(Number(ev.activityTaskCanceledEventAttributes.scheduledEventId ?? 0));
      if (!ex) continue;
      finishAttempt(ex, at, 'cancelled');
    } else if (ev.startChildWorkflowExecutionInitiatedEventAttributes) {
      const webhook = webhookStarted(ev.startChildWorkflowExecutionInitiatedEventAttributes, converter);
      if (webhook) tl.webhook = webhook;
    } else if (ev.workflowTaskFailedEventAttributes) {
      const f = failureView(converter, ev.workflowTaskFailedEventAttributes.failure);
      if (f) tl.workflowTaskFailures.push(f);
    } else if (ev.workflowExecutionCancelRequestedEventAttributes) {
      tl.cancelRequestedAt = iso(at);
    } else if (ev.workflowExecutionCompletedEventAttributes) {
      closedStatus = 'completed';
      closeMs = at;
      const result = obj(decodeFirst(converter, ev.workflowExecutionCompletedEventAttributes.result));
      completedResult = result;
      if (Array.isArray(result.outputs)) tl.outputs = result.outputs as BlobRef[];
      if (Array.isArray(result.timings)) tl.timings = result.timings as StageTiming[];
      if (str(result.backend)) tl.backend = str(result.backend);
    } else if (ev.workflowExecutionFailedEventAttributes) {
      closedStatus = 'failed';
      closeMs = at;
      tl.failure = failureView(converter, ev.workflowExecutionFailedEventAttributes.failure);
    } else if (ev.workflowExecutionTimedOutEventAttributes) {
      closedStatus = 'timed-out';
      closeMs = at;
      tl.failure = { message: 'the render exceeded its workflow timeout', type: 'Timeout' };
    } else if (ev.workflowExecutionCanceledEventAttributes) {
      closedStatus = 'cancelled';
      closeMs = at;
    } else if (ev.workflowExecutionTerminatedEventAttributes) {
      closedStatus = 'terminated';
      closeMs = at;
      const a = ev.workflowExecutionTerminatedEventAttributes;
      tl.failure = { message: `terminated${a.identity ? ` by ${a.identity}` : ''}${a.reason ? `: ${a.reason}` : ''}`, type: 'Terminated' };
    } else if (ev.workflowExecutionContinuedAsNewEventAttributes) {
      closedStatus = 'continued-as-new';
      closeMs = at;
    }
  }

  if (closedStatus) {
    tl.status = closedStatus;
    // The render ended while these were pending: Temporal records no outcome for them.
    for (const stage of tl.stages) {
      if (stage.outcome === 'scheduled' || stage.outcome === 'running') stage.outcome = stage.cancelRequested ? 'cancelled' : 'abandoned';
    }
  }
  // A failed render keeps the images of the items that finished before the failure.
  if (tl.outputs.length === 0 && collectedOutputs.length > 0) tl.outputs = collectedOutputs;
  tl.startedAt = iso(startMs);
  tl.closedAt = iso(closeMs);
  if (startMs !== undefined && closeMs !== undefined) tl.durationMs = closeMs - startMs;
  if (tl.failure) tl.reason = failureReason(tl.failure);
  else if (closedStatus === 'cancelled') tl.reason = 'cancelled';
  addOutcome(tl, closedStatus, completedResult);
  if (!closedStatus && live.pendingActivities) mergePending([...executions.values()], live.pendingActivities, converter);
  // Prompts of failed attempts too: they are what to look for in ComfyUI's logs.
  for (const stage of tl.stages) {
    if (stage.activityType !== 'runPrompt') continue;
    for (const a of stage.attempts) {
      if (!a.promptId) continue;
      const known = tl.prompts.find((p) => p.promptId === a.promptId);
      if (known) known.outcome = a.outcome;
      else tl.prompts.push({ item: stage.item ?? 0, promptId: a.promptId, attempt: a.attempt, outcome: a.outcome });
    }
  }
  tl.prompts.sort((x, y) => x.item - y.item || (x.attempt ?? 0) - (y.attempt ?? 0));
  return tl;
}

/** The build the submitter did before starting the render: completed at the start. */
function recordBuilt(tl: RenderTimeline, built: Record<string, unknown>, at: number | undefined, collected: BlobRef[]): void {
  const stage: StageView = {
    name: 'buildGraph',
    activityType: 'buildGraph',
    activityId: '',
    local: true,
    builtByFront: true,
    outcome: 'completed',
    attempts: [],
  };
  const attempt: AttemptView = { attempt: 1, outcome: 'completed' };
  if (at !== undefined) {
    stage.scheduledAt = stage.endedAt = attempt.startedAt = attempt.endedAt = iso(at);
    stage.durationMs = attempt.durationMs = 0;
  }
  stage.attempts.push(attempt);
  tl.stages.push(stage);
  recordResult(tl, stage, built, collected);
}

function withRetryState(error: FailureView, retryState: unknown): FailureView {
  const rs = enumName(temporal.api.enums.v1.RetryState, retryState, 'RETRY_STATE_');
  return rs && !error.retryState ? { ...error, retryState: rs } : error;
}

function recordResult(tl: RenderTimeline, stage: StageView, result: unknown, collected: BlobRef[]): void {
  const r = obj(result);
  if (stage.activityType === 'buildGraph') {
    const items = obj(r.plan).items;
    if (Array.isArray(items)) {
      tl.graphs = items.map((it) => {
        const o = obj(it);
        return { item: num(o.index) ?? 0, seed: num(o.seed) ?? 0, graph: obj(o.graph) as ComfyGraph };
      });
    }
  } else if (stage.activityType === 'runPrompt') {
    const promptId = str(r.promptId);
    if (promptId) {
      const p: RenderTimeline['prompts'][number] = { item: stage.item ?? 0, promptId };
      const attempt = num(r.attempt);
      if (attempt !== undefined) p.attempt = attempt;
      const s = num(r.startedAt);
      const f = num(r.finishedAt);
      if (s !== undefined) p.startedAt = iso(s);
      if (f !== undefined) p.finishedAt = iso(f);
      tl.prompts.push(p);
      const last = stage.attempts.at(-1);
      if (last && !last.promptId) last.promptId = promptId;
      // Attempts store their outputs themselves and say where they ran and where the time went.
      const backend = str(r.backend);
      if (last && backend) last.backend = backend;
      if (last && Array.isArray(r.timings)) last.steps = r.timings as StageTiming[];
    }
    if (Array.isArray(r.outputs)) collected.push(...(r.outputs as BlobRef[]));
  }
}

/** A running render: its pending activities say which attempt runs now, since when, and its heartbeat. */
function mergePending(executions: Execution[], pending: PendingActivity[], converter: PayloadConverter): void {
  for (const p of pending) {
    const ex = executions.find((e) => e.activityId === p.activityId && !e.closed);
    if (!ex) continue;
    const { stage } = ex;
    const n = p.attempt ?? 1;
    // History holds no start for a pending activity: its attempts so far come from describe() alone.
    if (ex.current) stage.attempts.splice(stage.attempts.indexOf(ex.current), 1);
    if (ex.workflowAttempt === undefined) stage.attempts.push(...earlierAttempts(n, failureView(converter, p.lastFailure)));
    const started = p.state === PendingState.PENDING_ACTIVITY_STATE_STARTED || p.state === PendingState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED;
    const attempt: AttemptView = { attempt: ex.workflowAttempt ?? n, outcome: started ? 'running' : 'waiting' };
    const startedAt = ms(p.lastStartedTime);
    if (started && startedAt !== undefined) {
      attempt.startedAt = iso(startedAt);
      attempt.durationMs = Date.now() - startedAt;
    }
    if (!started) {
      const next = ms(p.nextAttemptScheduleTime);
      attempt.note = next !== undefined ? `next attempt at ${iso(next)}` : 'waiting for a worker (for runPrompt: a free GPU slot)';
    }
    const heartbeat = decodeFirst(converter, p.heartbeatDetails);
    if (heartbeat !== undefined) {
      stage.heartbeat = heartbeat;
      const pid = str(obj(heartbeat).promptId);
      if (pid) attempt.promptId = pid;
    }
    stage.attempts.push(attempt);
    ex.current = attempt;
    stage.outcome = started ? 'running' : 'scheduled';
    if (p.state === PendingState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED) stage.cancelRequested = true;
  }
}

interface Execution {
  stage: StageView;
  activityId: string;
  /** The workflow's attempt number (input `attempt`) when the workflow, not Temporal, retries. */
  workflowAttempt?: number;
  current?: AttemptView;
  closed: boolean;
}

/**
 * The prompts an interrupt or a skip stopped (the last attempt of each such item): their activity completed,
 * so their attempt outcome is `completed`, but ComfyUI's history says `execution_interrupted`.
 */
function markStoppedPrompts(tl: RenderTimeline, result: Partial<Pick<RenderResult, 'skipped' | 'partial'>>): void {
  const skipped = Array.isArray(result.skipped) ? result.skipped : [];
  const partial = Array.isArray(result.partial) ? result.partial : [];
  const items = new Set([...skipped, ...partial.map((p) => p.item)]);
  for (const item of items) {
    const last = tl.prompts.filter((p) => p.item === item).sort((a, b) => (b.attempt ?? 0) - (a.attempt ?? 0))[0];
    if (!last) continue;
    const reached = partial.find((p) => p.item === item);
    last.stopped = {
      by: skipped.includes(item) ? 'skip' : 'interrupt',
      ...(reached?.step !== undefined ? { step: reached.step } : {}),
      ...(reached?.steps !== undefined ? { steps: reached.steps } : {}),
    };
  }
}

/** What happened, once the render ended: from its result (completed) or its failure. */
function addOutcome(tl: RenderTimeline, closed: RenderStatusName | undefined, result: Partial<RenderResult> | undefined): void {
  if (closed === 'completed') {
    const r = { ...result, outputs: tl.outputs, seeds: Array.isArray(result?.seeds) ? result.seeds : [] };
    const { outcome, summary, ...details } = outcomeOf(r);
    tl.outcome = { outcome, summary, ...details };
    tl.outputOutcomes = outputOutcomes({ ...r, ...(tl.request ? { request: tl.request } : {}) });
    markStoppedPrompts(tl, r);
  } else if (closed === 'failed' || closed === 'timed-out' || closed === 'terminated') {
    const cls = tl.failure ? failureClass(tl.failure) : undefined;
    tl.outcome = { outcome: closed, summary: `${closed}: ${tl.reason ?? 'no reason recorded'}`, ...(cls ? { failureClass: cls } : {}) };
  } else if (closed === 'cancelled') {
    tl.outcome = { outcome: 'cancelled', summary: 'cancelled' };
  }
}
