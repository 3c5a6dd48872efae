/**
 * Request errors of the A1111 front. Every bad input becomes one `RequestError` naming the offending
 * field (dot path, e.g. `init_images.0`), so a client learns what to fix and nothing is started.
 */

export type RequestErrorStatus = 400 | 404 | 413 | 422 | 503;

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

/**
 * The error body the front sends. One shape for every status, including type errors (422): A1111's
 * `handle_exception` envelope `{error, detail, body, errors}`. FastAPI's 422 `{"detail": [...]}` list is
 * deliberately NOT used: clients (webuiapi, SillyTavern, Open WebUI) show `detail` as text, and a list
 * there prints as `[object Object]`. `field` and `extra` are additions A1111 clients ignore.
 */
export interface A1111ErrorBody {
  error: string;
  detail: string;
  body: string;
  errors: string;
  field: string;
  [key: string]: unknown;
}

export function toA1111ErrorBody(err: RequestError): A1111ErrorBody {
  const issues = err.extra.issues;
  return {
    ...err.extra,
    // A1111 reports HTTPException for every deliberate 4xx; clients never switch on this value.
    error: 'HTTPException',
    detail: err.message,
    body: '',
    // All problems found, when validation found several; otherwise the same text as `detail`.
    errors: Array.isArray(issues) && issues.length > 1 ? issues.map(String).join('; ') : err.message,
    field: err.field,
  };
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
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}
