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

/** What a worker tells of a run it completes. */
export interface RunClosureListener {
  /** A completion of the run was sent to the server: not accepted yet (it may be refused, then another follows). */
  closing?: (run: ClosedRun) => void;
  /** The server accepted it: the run is closed with this result. */
  closed: (run: ClosedRun) => void;
}
