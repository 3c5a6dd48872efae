/**
 * Workflow history as a timeline: where a render's wall time goes between Temporal events (server clock,
 * same machine as the bench, so it lines up with the bench's own timestamps).
 */
import type { Client } from '@temporalio/client';
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';
import type { temporal as T } from '@temporalio/proto';

const temporal = proto.temporal;

type IHistory = T.api.history.v1.IHistory;
type IEvent = T.api.history.v1.IHistoryEvent;
const ET = temporal.api.enums.v1.EventType;

export function eventTimeMs(e: IEvent): number {
  const t = e.eventTime;
  if (!t) return NaN;
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

export async function fetchHistory(client: Client, workflowId: string): Promise<IHistory> {
  return client.workflow.getHandle(workflowId).fetchHistory();
}

export function encodedSize(h: IHistory): number {
  return temporal.api.history.v1.History.encode(h).finish().byteLength;
}

/** Encoded bytes per event type, largest first. */
export function sizeByEventType(h: IHistory): Array<{ type: string; count: number; bytes: number }> {
  const m = new Map<string, { count: number; bytes: number }>();
  for (const e of h.events ?? []) {
    const type = ET[e.eventType ?? 0]?.replace(/^EVENT_TYPE_/, '') ?? String(e.eventType);
    const bytes = temporal.api.history.v1.HistoryEvent.encode(e).finish().byteLength;
    const cur = m.get(type) ?? { count: 0, bytes: 0 };
    cur.count++;
    cur.bytes += bytes;
    m.set(type, cur);
  }
  return [...m.entries()].map(([type, v]) => ({ type, ...v })).sort((a, b) => b.bytes - a.bytes);
}

/** Encoded bytes per scheduled activity type (input) and completed activity type (result). */
export function sizeByActivity(h: IHistory): Array<{ what: string; bytes: number }> {
  const typeOf = new Map<number, string>();
  const m = new Map<string, number>();
  for (const e of h.events ?? []) {
    const id = Number(e.eventId);
    const bytes = temporal.api.history.v1.HistoryEvent.encode(e).finish().byteLength;
    let key: string | undefined;
    if (e.activityTaskScheduledEventAttributes) {
      const t = e.activityTaskScheduledEventAttributes.activityType?.name ?? '?';
      typeOf.set(id, t);
      key = `${t} input`;
    } else if (e.activityTaskCompletedEventAttributes) {
      key = `${typeOf.get(Number(e.activityTaskCompletedEventAttributes.scheduledEventId)) ?? '?'} result`;
    } else if (e.workflowExecutionStartedEventAttributes) key = 'workflow input (request)';
    else if (e.workflowExecutionCompletedEventAttributes) key = 'workflow result';
    if (key) m.set(key, (m.get(key) ?? 0) + bytes);
  }
  return [...m.entries()].map(([what, bytes]) => ({ what, bytes })).sort((a, b) => b.bytes - a.bytes);
}

export interface Mark {
  label: string;
  at: number;
}

/**
 * Labelled points of one render: workflow start/end, each workflow task (WFTn.sched/start/done), each
 * activity (name.sched/start/done). Repeated activity names get an ordinal.
 */
export function timeline(h: IHistory): Mark[] {
  const marks: Mark[] = [];
  const actName = new Map<number, string>();
  const seen = new Map<string, number>();
  let wft = 0;
  for (const e of h.events ?? []) {
    const at = eventTimeMs(e);
    const id = Number(e.eventId);
    switch (e.eventType) {
      case ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        marks.push({ label: 'wf.start', at });
        break;
      case ET.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
        marks.push({ label: 'wf.done', at });
        break;
      case ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
        wft++;
        marks.push({ label: `WFT${wft}.sched`, at });
        break;
      case ET.EVENT_TYPE_WORKFLOW_TASK_STARTED:
        marks.push({ label: `WFT${wft}.start`, at });
        break;
      case ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        marks.push({ label: `WFT${wft}.done`, at });
        break;
      case ET.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
        const base = e.activityTaskScheduledEventAttributes?.activityType?.name ?? 'activity';
        const n = (seen.get(base) ?? 0) + 1;
        seen.set(base, n);
        const name = n > 1 ? `${base}#${n}` : base;
        actName.set(id, name);
        marks.push({ label: `${name}.sched`, at });
        break;
      }
      case ET.EVENT_TYPE_ACTIVITY_TASK_STARTED:
        marks.push({ label: `${actName.get(Number(e.activityTaskStartedEventAttributes?.scheduledEventId)) ?? '?'}.start`, at });
        break;
      case ET.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        marks.push({ label: `${actName.get(Number(e.activityTaskCompletedEventAttributes?.scheduledEventId)) ?? '?'}.done`, at });
        break;
      default:
        break;
    }
  }
  return marks.sort((a, b) => a.at - b.at);
}

/**
 * Median duration of each consecutive segment across renders (segments are keyed by their labels; only
 * keys present in at least half the renders are shown), in first-seen order.
 */
export function segmentMedians(timelines: Mark[][]): Array<{ segment: string; p50: number; n: number }> {
  const order: string[] = [];
  const vals = new Map<string, number[]>();
  for (const tl of timelines) {
    for (let i = 1; i < tl.length; i++) {
      const key = `${tl[i - 1]!.label} -> ${tl[i]!.label}`;
      if (!vals.has(key)) {
        vals.set(key, []);
        order.push(key);
      }
      vals.get(key)!.push(tl[i]!.at - tl[i - 1]!.at);
    }
  }
  const half = Math.max(1, Math.floor(timelines.length / 2));
  return order
    .filter((k) => vals.get(k)!.length >= half)
    .map((k) => {
      const v = vals.get(k)!.sort((a, b) => a - b);
      return { segment: k, p50: v[Math.floor((v.length - 1) / 2)]!, n: v.length };
    });
}

/**
 * The stage timings the GPU activity reports in its result (`PromptRun.timings`: uploadInputs, prompt,
 * collectOutputs), by stage, summed over the render's items: what the activity's own span is made of.
 */
export function activityTimings(h: IHistory): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of h.events ?? []) {
    const data = e.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data;
    if (!data) continue;
    let result: unknown;
    try {
      result = JSON.parse(Buffer.from(data).toString('utf8'));
    } catch {
      continue;
    }
    const timings = (result as { timings?: Array<{ stage?: unknown; ms?: unknown }> } | null)?.timings;
    if (!Array.isArray(timings)) continue;
    for (const t of timings) if (typeof t.stage === 'string' && typeof t.ms === 'number') out.set(t.stage, (out.get(t.stage) ?? 0) + t.ms);
  }
  return out;
}
