/**
 * The error every layer throws for bad client input: a status and the offending field (dot path, e.g.
 * `init_images.0`), so a client learns what to fix and nothing is started. Neutral on purpose: image
 * decoding, the submission service and every route family throw it; each route family renders it in its own
 * error shape.
 */

export type RequestErrorStatus = 400 | 403 | 404 | 409 | 413 | 422 | 429 | 503;

export class RequestError extends Error {
  override readonly name = 'RequestError';
  readonly status: RequestErrorStatus;
  /** Dot path of the offending request field (`''` when the body as a whole is wrong). */
  readonly field: string;
  /** Machine-readable details (e.g. the list of valid names). */
  readonly extra: Record<string, unknown>;

  constructor(status: RequestErrorStatus, field: string, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.field = field;
    this.extra = extra;
  }
}

/** A refusal for lack of room (a full queue, 429 or 503) says when to come back: `extra.retryAfterSeconds`. */
export function retryAfterOf(err: RequestError): number | undefined {
  const s = err.extra.retryAfterSeconds;
  return typeof s === 'number' && s > 0 ? s : undefined;
}

export function isRequestError(e: unknown): e is RequestError {
  return e instanceof RequestError;
}

/** Format a value for an error message without echoing megabytes of base64 back to the client. */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return v.length > 40 ? `a string of ${v.length} characters` : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return `${typeof v} ${String(v)}`;
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** The part of a zod issue the mapping reads (zod's own type, without importing zod here). */
export interface ValidationIssue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

export interface IssueMapping {
  /** Default 400. */
  status?: RequestErrorStatus;
  /** The field named when an issue has no path (the query, the body as a whole): default `''`. */
  field?: string;
  /** Put before every issue path (a nested object validated on its own, e.g. `extra_params`). */
  pathPrefix?: readonly string[];
  /** The value validated: each issue then says what it got there (`…, got a string of 9 characters`). */
  value?: unknown;
}

/**
 * One RequestError for a failed validation: the first issue names the field and the message, every issue
 * is listed in `extra.issues` (A1111's envelope joins them into `errors`).
 */
export function requestErrorFromIssues(issues: readonly ValidationIssue[], opts: IssueMapping = {}): RequestError {
  const texts = issues.map((issue) => {
    const field = [...(opts.pathPrefix ?? []), ...issue.path.map(String)].join('.') || (opts.field ?? '');
    const got = 'value' in opts ? `, got ${describeValue(valueAt(opts.value, issue.path))}` : '';
    return { field, text: `${field || 'body'}: ${issue.message}${got}` };
  });
  const first = texts[0] ?? { field: opts.field ?? '', text: `${opts.field || 'body'}: invalid` };
  return new RequestError(opts.status ?? 400, first.field, first.text, { issues: texts.map((t) => t.text) });
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = value;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}
