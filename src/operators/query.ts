/**
 * Render filters → a Temporal visibility query (`WorkflowType='render' AND ExecutionStatus='Failed' AND
 * RenderModel='…' AND StartTime >= '…'`). The same string works in the Temporal UI and in
 * `temporal workflow list --query`, so operators can paste it. Values are checked against a strict
 * alphabet before they are quoted: the query language has no parameter binding.
 */
import { z } from 'zod';
import { RENDER_OUTCOMES, RENDER_STATUSES, type RenderStatusFilter } from './types.ts';

/** What visibility calls each status (`ExecutionStatus` values). */
export const TEMPORAL_STATUS: Record<RenderStatusFilter, string> = {
  running: 'Running',
  completed: 'Completed',
  failed: 'Failed',
  cancelled: 'Canceled',
  terminated: 'Terminated',
  'timed-out': 'TimedOut',
};

const RELATIVE = /^(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `2h`, `30m`, `1d` (that long before `now`), `now`, or an ISO 8601 date-time. Undefined when unreadable. */
export function parseTimeSpec(spec: string, now: Date = new Date()): Date | undefined {
  const s = spec.trim();
  if (s === 'now') return new Date(now.getTime());
  const rel = RELATIVE.exec(s);
  if (rel) {
    // `9999999999999999h` is before any representable date: unreadable, not a crash later in toISOString.
    const d = new Date(now.getTime() - Number(rel[1]) * UNIT_MS[rel[2]!]!);
    return Number.isFinite(d.getTime()) ? d : undefined;
  }
  // Date.parse accepts many shapes; insist on something that starts like an ISO date.
  if (!/^\d{4}-\d{2}-\d{2}/.test(s)) return undefined;
  const ms = Date.parse(s);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/** Values we quote into a query: ids, model and kind names. No quotes, spaces or operators. */
const SAFE_VALUE = /^[A-Za-z0-9._:/@+-]{1,200}$/;
const safeValue = (what: string) => z.string().trim().regex(SAFE_VALUE, `${what} may only contain letters, digits and . _ : / @ + -`);
const timeSpec = z
  .string()
  .trim()
  .min(1)
  .refine((s) => parseTimeSpec(s) !== undefined, 'expected an ISO date-time (2026-05-01T22:10:00Z) or a relative time such as 30m, 2h, 1d');

/** An outcome to filter by: one of RENDER_OUTCOMES, or `failed:<class>` (e.g. `failed:ComfyExecution`). */
const OUTCOME_FILTER = new RegExp(`^(${RENDER_OUTCOMES.join('|')}|failed:[A-Za-z0-9_.-]{1,100})$`);
const outcomeFilter = z
  .string()
  .trim()
  .regex(OUTCOME_FILTER, `outcome must be one of ${RENDER_OUTCOMES.join(', ')}, or failed:<class> such as failed:ComfyExecution`);

/** Filters as they arrive from a query string or the command line (strings), validated. */
export const renderFiltersSchema = z.object({
  status: z.enum(RENDER_STATUSES).optional(),
  /** What happened (search attribute RenderOutcome, set by renders started since it exists; `failed` by status). */
  outcome: outcomeFilter.optional(),
  model: safeValue('model').optional(),
  kind: safeValue('kind').optional(),
  since: timeSpec.optional(),
  until: timeSpec.optional(),
  replayOf: safeValue('replayOf').optional(),
  taskQueue: safeValue('taskQueue').optional(),
  /** The API key's name that started the render (a client key's lists are always narrowed to its own). */
  owner: safeValue('owner').optional(),
});

export type RenderFilters = z.infer<typeof renderFiltersSchema>;

export function buildListQuery(filters: RenderFilters, now: Date = new Date()): string {
  const parts = [`WorkflowType = 'render'`];
  const eq = (field: string, value: string): void => {
    // Validated by the schema; re-checked so a caller that skipped it cannot inject.
    if (!SAFE_VALUE.test(value)) throw new Error(`unsafe ${field} value ${JSON.stringify(value)}`);
    parts.push(`${field} = '${value}'`);
  };
  if (filters.taskQueue) eq('TaskQueue', filters.taskQueue);
  if (filters.status) parts.push(`ExecutionStatus = '${TEMPORAL_STATUS[filters.status]}'`);
  if (filters.model) eq('RenderModel', filters.model);
  if (filters.kind) eq('RenderKind', filters.kind);
  if (filters.replayOf) eq('RenderReplayOf', filters.replayOf);
  if (filters.owner) eq('RenderOwner', filters.owner);
  if (filters.outcome === 'failed') parts.push(`ExecutionStatus = 'Failed'`);
  else if (filters.outcome) {
    if (!OUTCOME_FILTER.test(filters.outcome)) throw new Error(`unsafe outcome value ${JSON.stringify(filters.outcome)}`);
    parts.push(`RenderOutcome = '${filters.outcome}'`);
  }
  if (filters.since) parts.push(`StartTime >= '${toQueryTime(filters.since, now)}'`);
  if (filters.until) parts.push(`StartTime <= '${toQueryTime(filters.until, now)}'`);
  return parts.join(' AND ');
}

function toQueryTime(spec: string, now: Date): string {
  const d = parseTimeSpec(spec, now);
  if (!d) throw new Error(`unreadable time ${JSON.stringify(spec)}`);
  return d.toISOString();
}

/** Opaque paging cursor ↔ Temporal's nextPageToken (bytes). */
export function encodeCursor(token: Uint8Array | null | undefined): string | undefined {
  if (!token || token.length === 0) return undefined;
  return Buffer.from(token).toString('base64url');
}

export const cursorSchema = z.string().regex(/^[A-Za-z0-9_-]{1,4096}$/, 'not a cursor returned by this API');

export function decodeCursor(cursor: string | undefined): Uint8Array | undefined {
  return cursor ? new Uint8Array(Buffer.from(cursor, 'base64url')) : undefined;
}
