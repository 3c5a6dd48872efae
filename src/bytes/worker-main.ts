/** A byte worker: runs the tasks of tasks.ts one message at a time and answers with the result or the error. */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort } from 'node:worker_threads';
import { TASKS, type TaskName } from './tasks.ts';
import { toWireError, transferable, type WorkerReply } from './wire.ts';

/** The Buffers inside a result (one level of arrays and objects deep, where tasks put them). */
function buffersIn(value: unknown, depth = 0): Uint8Array[] {
  if (value instanceof Uint8Array) return [value];
  if (depth > 3 || value === null || typeof value !== 'object') return [];
  return Object.values(value as Record<string, unknown>).flatMap((v) => buffersIn(v, depth + 1));
}

/**
 * A full collection once the tasks have left GARBAGE_BYTES more heap than the last one found live. This
 * isolate's garbage is images: their base64 text (a string of megabytes each, copied in by postMessage) and
 * the decoders' buffers. V8 would keep them until the heap had grown well past what is live: under 100
 * concurrent 2 MB uploads this isolate held 15–26 MB of heap, ~5 MB of it live, and collecting after the
 * tasks took 4–7 MB off the service's peak RSS (bench/README.md, issue 25 fifth pass). A collection of
 * this small heap takes ~2 ms, next to tens for decoding one image.
 */
const GARBAGE_BYTES = 6 * 1024 * 1024;
const collect = v8Gc();
let liveAfterGc = getHeapStatistics().used_heap_size;

function collectGarbage(): void {
  if (getHeapStatistics().used_heap_size - liveAfterGc < GARBAGE_BYTES) return;
  collect();
  liveAfterGc = getHeapStatistics().used_heap_size;
}

/**
 * V8's gc(), taken from a context made while --expose-gc was on for that moment only (no other context gets
 * it). A runtime that refuses the flag leaves the collections to V8: memory, not correctness.
 */
function v8Gc(): () => void {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return () => undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

parentPort!.on('message', (msg: { name: TaskName; input: unknown }) => {
  const task = TASKS[msg.name] as (input: unknown) => Promise<unknown>;
  task(msg.input)
    .then(
      (value) => parentPort!.postMessage({ ok: true, value } satisfies WorkerReply, transferable(buffersIn(value))),
      (err: unknown) => parentPort!.postMessage({ ok: false, error: toWireError(err) } satisfies WorkerReply),
    )
    .finally(collectGarbage);
});
