/**
 * Request errors in A1111's envelope. The error itself (`RequestError`) is neutral (src/errors): every
 * layer throws it, this front renders it.
 */
import type { RequestError } from '../../errors/request-error.ts';

export { RequestError, describeValue, isRequestError, type RequestErrorStatus } from '../../errors/request-error.ts';

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
