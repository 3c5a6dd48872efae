/**
 * Per-request priority: `X-Priority` header or body `priority`, an integer 1 (most urgent) … 5, default 3.
 * It becomes the render workflow's Temporal priority key, which its activities inherit: among prompts
 * waiting in the shared GPU queue a lower key starts first, first-in-first-out within a key (strictly on a
 * single task-queue partition, see docs/production.md "Temporal settings"). No preemption: a running prompt keeps its
 * GPU. Given both ways, header and body must agree (else 422), so a client never gets a priority it did
 * not mean.
 */
import { RequestError } from '../errors/request-error.ts';
import { DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY } from '../contracts/priority.ts';

export { DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY } from '../contracts/priority.ts';

function parse(v: unknown, field: string): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < MIN_PRIORITY || n > MAX_PRIORITY) {
    throw new RequestError(
      422,
      field,
      `${field} must be an integer from ${MIN_PRIORITY} (most urgent) to ${MAX_PRIORITY} (least), default ${DEFAULT_PRIORITY}; got ${JSON.stringify(v)}`,
    );
  }
  return n;
}

/** The render's priority key from the `X-Priority` header and the body's `priority` field. */
export function requestPriority(header: string | string[] | undefined, body: unknown): number {
  const fromHeader = parse(Array.isArray(header) ? header[0] : header, 'X-Priority');
  const fromBody = parse(body && typeof body === 'object' && !Array.isArray(body) ? (body as { priority?: unknown }).priority : undefined, 'priority');
  if (fromHeader !== undefined && fromBody !== undefined && fromHeader !== fromBody) {
    throw new RequestError(422, 'priority', `X-Priority ${fromHeader} and body priority ${fromBody} disagree: send one of them`);
  }
  return fromHeader ?? fromBody ?? DEFAULT_PRIORITY;
}
