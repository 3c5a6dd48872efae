/**
 * A small pool of worker threads for parsing untrusted bytes (request images, their metadata) off the event
 * loop: the loop that answers requests (and, in `start` mode, heartbeats renders) never inflates, hashes or
 * converts a client's pixels itself. The runtime enforces the bounds, not the parsers: each worker has a
 * capped V8 heap (`resourceLimits`) and every task a deadline, past which its worker is terminated (a
 * parser stuck in a loop cannot be interrupted any other way) and the task fails with BytePoolError.
 *
 * Started lazily, at most BYTE_WORKERS threads (this service's CPU-heavy work is ComfyUI's, not ours),
 * reused, never keeping an idle process alive (unref), and stopped by closeBytePool (the HTTP front closes it).
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { TaskInput, TaskName, TaskOutput } from './tasks.ts';
import { reviveError, type WorkerReply } from './wire.ts';

/** Two threads: enough to keep a 2-core machine's loop free, few enough not to compete with the renders. */
export const BYTE_WORKERS = Math.max(1, Math.min(2, os.availableParallelism()));
/** A task that takes longer is a hostile input or an overloaded machine: either way it is refused. */
export const BYTE_TASK_TIMEOUT_MS = 15_000;
let taskTimeoutMs = BYTE_TASK_TIMEOUT_MS;
/** Tests: a deadline short enough to reach (returns the previous one). */
export function setByteTaskTimeout(ms: number): number {
  const previous = taskTimeoutMs;
  taskTimeoutMs = ms;
  return previous;
}
/** V8 heap of one worker (the images themselves are Buffers, bounded by MAX_IMAGE_BYTES and the inflate limits). */
export const BYTE_WORKER_HEAP_MB = 256;
/** A worker idle this long is stopped (its memory returned); the next task starts one again. */
const IDLE_STOP_MS = 60_000;

export class BytePoolError extends Error {
  override name = 'BytePoolError';
  constructor(
    readonly reason: 'timeout' | 'memory' | 'crashed',
    message: string,
  ) {
    super(message);
  }
}

interface Job {
  name: TaskName;
  input: unknown;
  transfer: ArrayBuffer[];
  resolve(value: unknown): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
  timer?: NodeJS.Timeout;
  idle?: NodeJS.Timeout;
}

/**
 * A young generation of 4 MB, as small as the service's own (scripts/run.sh: 2 MB semi-spaces): the big
 * strings and buffers of a task live in large-object space and off-heap anyway, and a 16 MB young generation
 * per thread was RSS held through a pile-up of image bodies (bench/README.md, issue 25).
 */
const RESOURCE_LIMITS = { maxOldGenerationSizeMb: BYTE_WORKER_HEAP_MB, maxYoungGenerationSizeMb: 4 };

/**
 * Built (dist/), the worker is plain JavaScript next to this file. Run from TypeScript (tests, tsx), it is
 * bundled once with esbuild (tsx's own compiler) into one script: a tsx loader inside every worker would
 * add its own loader thread, ~30 MB of RSS per worker.
 */
type WorkerSource = { code: string } | { url: URL };
let workerCode: Promise<WorkerSource> | undefined;
let loadedCode: WorkerSource | undefined;
function loadWorkerCode(): Promise<WorkerSource> {
  return (workerCode ??= (async () => {
    if (!import.meta.url.endsWith('.ts')) return { url: new URL('./worker-main.js', import.meta.url) };
    const esbuild = await import('esbuild');
    const out = await esbuild.build({
      entryPoints: [new URL('./worker-main.ts', import.meta.url).pathname],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      write: false,
      logLevel: 'silent',
    });
    return { code: out.outputFiles[0]!.text };
  })().then((c) => (loadedCode = c)));
}

/** A worker from the code loadWorkerCode has loaded (the pool awaits it before queueing any task). */
function spawnNow(): Worker {
  if (!loadedCode) throw new Error('byte worker code not loaded');
  const source = loadedCode;
  return 'url' in source
    ? new Worker(source.url, { resourceLimits: RESOURCE_LIMITS })
    : new Worker(source.code, { eval: true, resourceLimits: RESOURCE_LIMITS });
}

class BytePool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];

  async run<N extends TaskName>(name: N, input: TaskInput<N>, transfer: ArrayBuffer[] = []): Promise<TaskOutput<N>> {
    await loadWorkerCode();
    return new Promise<TaskOutput<N>>((resolve, reject) => {
      this.queue.push({ name, input, transfer, resolve, reject });
      this.dispatch();
    });
  }

  /** Workers running now (for tests: the pool stays small and stops cleanly). */
  size(): number {
    return this.slots.length;
  }

  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    for (const job of this.queue.splice(0)) job.reject(new BytePoolError('crashed', 'byte workers stopped'));
    await Promise.all(slots.map((s) => this.stop(s, new BytePoolError('crashed', 'byte workers stopped'))));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot && this.slots.length < BYTE_WORKERS) slot = this.start();
      if (!slot) return;
      this.assign(slot, this.queue.shift()!);
    }
  }

  private start(): Slot {
    const worker = spawnNow();
    worker.unref();
    const slot: Slot = { worker };
    worker.on('message', (reply: WorkerReply) => this.finish(slot, reply));
    worker.on('error', (err: Error & { code?: string }) => {
      const memory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      void this.stop(
        slot,
        new BytePoolError(memory ? 'memory' : 'crashed', memory ? 'parsing the input ran out of its memory bound' : `byte worker failed: ${err.message}`),
      );
    });
    worker.on('exit', () => void this.stop(slot, new BytePoolError('crashed', 'byte worker exited')));
    this.slots.push(slot);
    return slot;
  }

  private assign(slot: Slot, job: Job): void {
    clearTimeout(slot.idle);
    slot.job = job;
    // Held while it works (a caller awaiting it keeps the process), let go while idle.
    slot.worker.ref();
    slot.timer = setTimeout(() => {
      void this.stop(slot, new BytePoolError('timeout', `parsing the input took longer than ${taskTimeoutMs} ms`));
    }, taskTimeoutMs).unref();
    slot.worker.postMessage({ name: job.name, input: job.input }, job.transfer);
  }

  private finish(slot: Slot, reply: WorkerReply): void {
    const job = slot.job;
    if (!job) return;
    clearTimeout(slot.timer);
    slot.job = undefined;
    slot.worker.unref();
    if (reply.ok) job.resolve(reply.value);
    else job.reject(reviveError(reply.error));
    slot.idle = setTimeout(() => void this.stop(slot), IDLE_STOP_MS).unref();
    this.dispatch();
  }

  /** Terminates a worker (failing its task with `err`, if it has one) and lets the queue go on without it. */
  private async stop(slot: Slot, err?: BytePoolError): Promise<void> {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    clearTimeout(slot.timer);
    clearTimeout(slot.idle);
    const job = slot.job;
    slot.job = undefined;
    if (job) job.reject(err ?? new BytePoolError('crashed', 'byte worker stopped'));
    slot.worker.removeAllListeners('exit');
    slot.worker.on('error', () => undefined);
    await slot.worker.terminate().catch(() => undefined);
    this.dispatch();
  }
}

const pool = new BytePool();

/** Runs task `name` of tasks.ts in a byte worker. Rejects with the task's own error (RequestError...) or BytePoolError. */
export function runByteTask<N extends TaskName>(name: N, input: TaskInput<N>, transfer: ArrayBuffer[] = []): Promise<TaskOutput<N>> {
  return pool.run(name, input, transfer);
}

/** Stops every byte worker (queued tasks fail); the next task starts them again. */
export function closeBytePool(): Promise<void> {
  return pool.close();
}

export function bytePoolSize(): number {
  return pool.size();
}
