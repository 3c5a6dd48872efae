/** Messages between a `start` front and its worker thread (app/worker-thread.ts, app/worker-thread-main.ts). */
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { PlainStartOptions, StartFailure } from '../renders/eager-start.ts';
import type { ClosedRun } from '../contracts/closed-run.ts';

/** The metrics of one registry as prom-client serialises them for aggregation. */
export type RegistryJson = MetricObjectWithValues<MetricValue<string>>[];

export type ToWorker =
  /** Drain (running activities get SHUTDOWN_GRACE_MS) and exit. */
  | { type: 'stop' }
  | { type: 'metrics'; id: number }
  /** Are you running? (answered with a pong at once: a thread that does not is hung.) */
  | { type: 'ping'; id: number }
  /** Start a render eagerly on the thread's worker connection (renders/eager-start.ts). */
  | { type: 'start'; id: number; start: PlainStartOptions };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'metrics'; id: number; metrics: RegistryJson }
  | { type: 'pong'; id: number }
  | { type: 'started'; id: number; runId: string }
  | { type: 'start-failed'; id: number; failure: StartFailure }
  /** A run's completion was sent to the server (not accepted yet), or accepted: it is closed (worker/run-closures.ts). */
  | { type: 'run-closing' | 'run-closed'; run: ClosedRun };

const isObject = (m: unknown): m is Record<string, unknown> => typeof m === 'object' && m !== null;

export function isToWorker(m: unknown): m is ToWorker {
  if (!isObject(m)) return false;
  if (m.type === 'stop') return true;
  if (m.type === 'start') return typeof m.id === 'number' && isObject(m.start);
  return (m.type === 'metrics' || m.type === 'ping') && typeof m.id === 'number';
}

export function isFromWorker(m: unknown): m is FromWorker {
  if (!isObject(m)) return false;
  if (m.type === 'ready') return true;
  if (m.type === 'pong') return typeof m.id === 'number';
  if (m.type === 'started') return typeof m.id === 'number' && typeof m.runId === 'string';
  if (m.type === 'start-failed') return typeof m.id === 'number' && isObject(m.failure);
  if (m.type === 'run-closing' || m.type === 'run-closed') return isObject(m.run) && typeof m.run.runId === 'string' && isObject(m.run.result);
  return m.type === 'metrics' && typeof m.id === 'number' && Array.isArray(m.metrics);
}
