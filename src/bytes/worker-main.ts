/** A byte worker: runs the tasks of tasks.ts one message at a time and answers with the result or the error. */
import { parentPort } from 'node:worker_threads';
import { TASKS, type TaskName } from './tasks.ts';
import { toWireError, transferable, type WorkerReply } from './wire.ts';

/** The Buffers inside a result (one level of arrays and objects deep, where tasks put them). */
function buffersIn(value: unknown, depth = 0): Uint8Array[] {
  if (value instanceof Uint8Array) return [value];
  if (depth > 3 || value === null || typeof value !== 'object') return [];
  return Object.values(value as Record<string, unknown>).flatMap((v) => buffersIn(v, depth + 1));
}

parentPort!.on('message', (msg: { name: TaskName; input: unknown }) => {
  const task = TASKS[msg.name] as (input: unknown) => Promise<unknown>;
  task(msg.input).then(
    (value) => parentPort!.postMessage({ ok: true, value } satisfies WorkerReply, transferable(buffersIn(value))),
    (err: unknown) => parentPort!.postMessage({ ok: false, error: toWireError(err) } satisfies WorkerReply),
  );
});
