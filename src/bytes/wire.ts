/** What crosses the thread boundary between the byte pool and its workers: replies and their errors. */
import { RequestError, type RequestErrorStatus } from '../errors/request-error.ts';

export type WireError =
  | { kind: 'request'; status: RequestErrorStatus; field: string; message: string; extra: Record<string, unknown> }
  | { kind: 'error'; name: string; message: string };

/** The name a byte worker's error has when a body is not JSON (or carries `__proto__`), as tasks.ts throws it. */
export const INVALID_JSON = 'InvalidJsonBody';

export type WorkerReply = { ok: true; value: unknown } | { ok: false; error: WireError };

export function toWireError(err: unknown): WireError {
  if (err instanceof RequestError) return { kind: 'request', status: err.status, field: err.field, message: err.message, extra: err.extra };
  const e = err instanceof Error ? err : new Error(String(err));
  return { kind: 'error', name: e.name, message: e.message };
}

/** The worker's error as thrown there: a RequestError stays one (its status and field are the answer). */
export function reviveError(w: WireError): Error {
  if (w.kind === 'request') return new RequestError(w.status, w.field, w.message, w.extra);
  const e = new Error(w.message);
  e.name = w.name;
  return e;
}

/** Buffers come back from a worker as plain Uint8Arrays (structured clone): the same bytes as a Buffer again. */
export function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/**
 * ArrayBuffers of `buffers` worth moving instead of copying: a large Buffer owns its memory, a small one may
 * sit in Node's shared allocation pool, which must not be detached.
 */
export function transferable(buffers: Uint8Array[]): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const b of buffers) if (b.byteLength >= 64 * 1024 && b.buffer instanceof ArrayBuffer) out.add(b.buffer);
  return [...out];
}
