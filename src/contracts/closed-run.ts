/**
 * A workflow run that a worker of this process completed and the server accepted as closed: told by the worker
 * (src/worker/run-closures.ts) to the front waiting on it (src/renders/closed-runs.ts), across the worker
 * thread's port, so the front answers without waiting on Temporal's history long poll. Plain data only.
 */

/** A Temporal payload as plain bytes (what a MessagePort carries): encoded by the worker's data converter. */
export interface PlainPayload {
  metadata: Record<string, Uint8Array>;
  data: Uint8Array;
}

export interface ClosedRun {
  runId: string;
  /** The workflow's return value, as the worker encoded it for the server. */
  result: PlainPayload;
}
