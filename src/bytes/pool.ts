/**
 * A small pool of worker threads for parsing untrusted bytes (request images, their metadata) off the event
 * loop: the loop that answers requests (and, in `start` mode, heartbeats renders) never inflates, hashes or
 * converts a client's pixels itself. The runtime enforces the bounds, not the parsers: each worker has a
 * capped V8 heap (`resourceLimits`) and every task a deadline, past which its worker is terminated (a
 * parser stuck in a loop cannot be interrupted any other way) and the task fails with BytePoolError.
 *
 * Started lazily, one thread, a second (BYTE_WORKERS) only beside heavy tasks (dispatch), reused, never keeping an idle process alive (unref), and stopped by closeBytePool (the HTTP front closes it).
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { TaskInput, TaskName, TaskOutput } from './tasks.ts';
import { reviveError, type WorkerReply } from './wire.ts';
import { currentClient } from '../fair/client-context.ts';
import { HEAVY_TASK_PIXELS } from './cost.ts';

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
    /** busy: the queue is full or the task waited out its deadline; aborted: its client went away. */
    readonly reason: 'timeout' | 'memory' | 'crashed' | 'busy' | 'aborted',
    message: string,
  ) {
    super(message);
  }
}

/** Tasks one client may have waiting, light and heavy apart: a flood of 16 Mpx images never refuses a thumbnail. */
export const BYTE_QUEUE_PER_CLIENT = { light: 64, heavy: 64 } as const;
/** Tasks waiting in all (their inputs are held in this process meanwhile). */
export const BYTE_QUEUE_TOTAL = 256;
/** Workers heavy tasks may hold together: one stays free for light tasks whoever floods the pool. */
const HEAVY_SHARE = Math.max(1, BYTE_WORKERS - 1);

/** Who a task is for and what it costs (cost.ts); default: the request's client (fair/client-context.ts). */
export interface TaskOptions {
  transfer?: ArrayBuffer[];
  /** Pixels the task's images declare. */
  pixels?: number;
}

interface Job {
  name: TaskName;
  input: unknown;
  transfer: ArrayBuffer[];
  client: string;
  heavy: boolean;
  /** From when it was queued: waiting counts against it too. */
  deadline: number;
  signal: AbortSignal;
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** Fails the job once its deadline passes while it waits (cleared when it gets a worker). */
  waitTimer?: NodeJS.Timeout;
  /** Removes the job's abort listener and wait timer. */
  cleanup(): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
  timer?: NodeJS.Timeout;
  idle?: NodeJS.Timeout;
}

/** One client's waiting tasks; light ones go first (they are milliseconds each). */
interface ClientQueue {
  light: Job[];
  heavy: Job[];
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

/**
 * Fair shares: clients (an API key, else a remote address) take turns, round robin; within a client light
 * tasks pass heavy ones; heavy tasks hold at most HEAVY_SHARE workers. So one client's flood of 16 Mpx
 * images occupies one worker while everyone's small images go through the other, and a client's waiting
 * tasks are bounded (BytePoolError 'busy', a 503 with Retry-After). A task's deadline runs from when it was
 * queued, and a task whose client has gone is dropped from the queue (see drop for one already running).
 */
class BytePool {
  private readonly slots: Slot[] = [];
  private readonly queues = new Map<string, ClientQueue>();
  /** Clients with waiting tasks, the next to be served first. */
  private readonly turn: string[] = [];
  private waiting = 0;

  async run<N extends TaskName>(name: N, input: TaskInput<N>, opts: TaskOptions = {}): Promise<TaskOutput<N>> {
    const { client, signal } = currentClient();
    const enqueuedAt = Date.now();
    await loadWorkerCode();
    return new Promise<TaskOutput<N>>((resolve, reject) => {
      if (signal.aborted) return reject(new BytePoolError('aborted', 'the client went away'));
      const heavy = (opts.pixels ?? 0) > HEAVY_TASK_PIXELS;
      const queue = this.queues.get(client) ?? { light: [], heavy: [] };
      const lane = heavy ? queue.heavy : queue.light;
      if (lane.length >= BYTE_QUEUE_PER_CLIENT[heavy ? 'heavy' : 'light'] || this.waiting >= BYTE_QUEUE_TOTAL) {
        return reject(new BytePoolError('busy', `too many ${heavy ? 'large images' : 'images'} are waiting to be checked; retry shortly`));
      }
      const job: Job = {
        name,
        input,
        transfer: opts.transfer ?? [],
        client,
        heavy,
        deadline: enqueuedAt + taskTimeoutMs,
        signal,
        resolve,
        reject,
        cleanup: () => undefined,
      };
      const onAbort = (): void => this.drop(job, new BytePoolError('aborted', 'the client went away'));
      job.waitTimer = setTimeout(() => this.drop(job, new BytePoolError('busy', `waited ${taskTimeoutMs} ms for a byte worker; retry shortly`)), taskTimeoutMs);
      job.waitTimer.unref();
      signal.addEventListener('abort', onAbort, { once: true });
      job.cleanup = () => {
        clearTimeout(job.waitTimer);
        signal.removeEventListener('abort', onAbort);
      };
      lane.push(job);
      this.waiting++;
      if (!this.queues.has(client)) {
        this.queues.set(client, queue);
        this.turn.push(client);
      }
      this.dispatch();
    });
  }

  /** Workers running now (for tests: the pool stays small and stops cleanly). */
  size(): number {
    return this.slots.length;
  }

  /** Tasks waiting for a worker (tests and /metrics). */
  queued(): number {
    return this.waiting;
  }

  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    for (const queue of [...this.queues.values()]) {
      for (const job of [...queue.light, ...queue.heavy]) this.drop(job, new BytePoolError('crashed', 'byte workers stopped'));
    }
    await Promise.all(slots.map((s) => this.stop(s, new BytePoolError('crashed', 'byte workers stopped'))));
  }

  /**
   * A job leaves its queue with `err` as its answer. One already running is left to finish (its answer
   * unused): stopping a worker and starting another costs the front's event loop more than the rest of one
   * check costs one worker, and a task's deadline bounds it. Heavy tasks hold at most HEAVY_SHARE workers
   * meanwhile, so what an abandoned check delays is other heavy checks, never the light ones.
   */
  private drop(job: Job, err: BytePoolError): void {
    const running = this.slots.find((s) => s.job === job);
    if (running) {
      job.reject(err);
      return;
    }
    const queue = this.queues.get(job.client);
    const lane = queue && (job.heavy ? queue.heavy : queue.light);
    const i = lane ? lane.indexOf(job) : -1;
    if (i < 0) return;
    lane!.splice(i, 1);
    this.waiting--;
    this.forgetIfEmpty(job.client);
    job.cleanup();
    job.reject(err);
  }

  private forgetIfEmpty(client: string): void {
    const queue = this.queues.get(client);
    if (!queue || queue.light.length > 0 || queue.heavy.length > 0) return;
    this.queues.delete(client);
    this.turn.splice(this.turn.indexOf(client), 1);
  }

  /**
   * One worker does the work; another starts only while every running one holds a heavy task, and then
   * only a light task can be next (heavy ones hold at most HEAVY_SHARE workers). A pile-up of ordinary
   * images goes through one thread, milliseconds each, instead of holding a second isolate's heap (~20 MB
   * at the 100-client peak, bench/README.md, issue 25); a flood of 16 Mpx images still never delays a thumbnail.
   */
  private dispatch(): void {
    for (;;) {
      const idle = this.slots.find((s) => !s.job);
      const room = this.slots.length < BYTE_WORKERS && this.slots.every((s) => s.job?.heavy);
      if (!idle && !room) return;
      const job = this.next();
      if (!job) return;
      this.assign(idle ?? this.start(), job);
    }
  }

  /** The next client in turn with a task that may run now; that client goes to the back of the line. */
  private next(): Job | undefined {
    const heavyRunning = this.slots.filter((s) => s.job?.heavy).length;
    for (let i = 0; i < this.turn.length; i++) {
      const client = this.turn[i]!;
      const queue = this.queues.get(client)!;
      const lane = queue.light.length > 0 ? queue.light : heavyRunning < HEAVY_SHARE ? queue.heavy : undefined;
      const job = lane?.shift();
      if (!job) continue;
      this.waiting--;
      this.turn.splice(i, 1);
      this.turn.push(client);
      this.forgetIfEmpty(client);
      return job;
    }
    return undefined;
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
    clearTimeout(job.waitTimer);
    slot.job = job;
    // Held while it works (a caller awaiting it keeps the process), let go while idle.
    slot.worker.ref();
    // What is left of the deadline, but never less than a tenth of it: a task that waited long still gets to run.
    const left = Math.max(job.deadline - Date.now(), taskTimeoutMs / 10);
    slot.timer = setTimeout(() => {
      void this.stop(slot, new BytePoolError('timeout', `parsing the input took longer than ${taskTimeoutMs} ms`));
    }, left).unref();
    slot.worker.postMessage({ name: job.name, input: job.input }, job.transfer);
  }

  private finish(slot: Slot, reply: WorkerReply): void {
    const job = slot.job;
    if (!job) return;
    clearTimeout(slot.timer);
    slot.job = undefined;
    job.cleanup();
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
    if (job) {
      job.cleanup();
      job.reject(err ?? new BytePoolError('crashed', 'byte worker stopped'));
    }
    slot.worker.removeAllListeners('exit');
    slot.worker.on('error', () => undefined);
    // Its place is free at once: the next task need not wait for the old thread to end.
    this.dispatch();
    await slot.worker.terminate().catch(() => undefined);
  }
}

const pool = new BytePool();

/** Runs task `name` of tasks.ts in a byte worker. Rejects with the task's own error (RequestError...) or BytePoolError. */
export function runByteTask<N extends TaskName>(name: N, input: TaskInput<N>, opts: TaskOptions = {}): Promise<TaskOutput<N>> {
  return pool.run(name, input, opts);
}

export function byteTasksQueued(): number {
  return pool.queued();
}

/** Stops every byte worker (queued tasks fail); the next task starts them again. */
export function closeBytePool(): Promise<void> {
  return pool.close();
}

export function bytePoolSize(): number {
  return pool.size();
}
