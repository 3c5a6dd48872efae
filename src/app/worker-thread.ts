/**
 * `start` mode's worker thread. The Temporal workers (workflows, the prompt activities and their heartbeats)
 * run in a `worker_thread` of the front's process, running `worker` mode on the same code, configuration and
 * Temporal server. The thread has its own event loop and its own V8 heap, so nothing the front does on its
 * loop (parsing a request, collecting an image-sized heap) delays a heartbeat; and it shares the process,
 * so it costs a V8 isolate (~40 MB with the SDK) instead of a second node process (~130 MB, bench/README.md).
 *
 * The front supervises it:
 * - start-up waits for the thread's first "ready"; a thread that ends before it fails the start;
 * - a thread that ends later (an uncaught error, its heap limit, workers that stop on their own) is started
 *   again after a back-off (1 s doubling to 30 s, reset once a thread has run for a minute); its renders' next
 *   attempts re-attach to their prompts;
 * - a thread that hangs (a busy loop: it exists but runs nothing else) is noticed by a ping over its port
 *   (watchResponsiveness): unanswered for `pingTimeoutMs` it is reported unhealthy, for 3× that it is
 *   terminated, and then started again like one that ended;
 * - `stop` asks the thread to drain and waits for it to end (terminated after `stopTimeoutMs`).
 * Signals reach the front only (they are the process's); the front decides the order of the shutdown.
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.ts';
import { isFromWorker, type RegistryJson, type ToWorker } from './worker-ipc.ts';
import { fromStartFailure, toPlain, type EagerStarter, type StartFailure } from '../renders/eager-start.ts';
import type { RunClosureListener } from '../contracts/closed-run.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Run from dist/ (plain node on the compiled JavaScript, scripts/build.sh) rather than TypeScript via tsx. */
const compiled = import.meta.url.endsWith('.js');

/** The thread's entry module. */
function entry(): URL {
  const main = pathToFileURL(path.join(here, `worker-thread-main${compiled ? '.js' : '.ts'}`));
  if (compiled) return main;
  // TypeScript (tests, tsx): a worker thread does not get the module hooks of the thread that starts it, so a
  // two-line module registers tsx's in the thread first. tsx is resolved only here: dist/ runs without it.
  const tsx = import.meta.resolve('tsx/esm/api');
  return new URL(
    `data:text/javascript,${encodeURIComponent(`import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(main.href)});`)}`,
  );
}

export interface WorkerThreadOptions {
  /** The thread's environment: the front's, with TEMPORAL_ADDRESS pointing at the server the front uses. */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** How long a drain may take before the thread is terminated (its SHUTDOWN_GRACE_MS plus closing). */
  stopTimeoutMs: number;
  /** How long a thread may take to be ready (loading the SDK next to a CPU hog takes a while). */
  readyTimeoutMs?: number;
  backoff?: { firstMs: number; maxMs: number };
  /** A ready thread that does not answer a ping within this is reported unhealthy; after 3× it is terminated. */
  pingTimeoutMs?: number;
}

export interface WorkerThreadStatus {
  ok: boolean;
  detail: string;
  threadId?: number;
}

export interface WorkerThread {
  /** Resolves when the first thread is ready; rejects if it ends or times out before. */
  ready: Promise<void>;
  status(): WorkerThreadStatus;
  /** The running thread's metrics registry, or undefined when there is none or it does not answer in time. */
  metrics(timeoutMs?: number): Promise<RegistryJson | undefined>;
  /** Drain the thread and wait for it to end; no restart after this. */
  stop(): Promise<void>;
  /** Starts a render eagerly on the thread's connection; rejects when no ready thread answers in time. */
  startRender: EagerStarter;
  /** Tells `listener` of each run the thread's workers complete: its completion sent, then closed (worker/run-closures.ts). */
  onRunClosed(listener: RunClosureListener): true;
}

/** A start the thread has not answered in this time is given up (the caller starts the render itself). */
const START_TIMEOUT_MS = 10_000;

type StartAnswer = { ok: true; runId: string } | { ok: false; failure: StartFailure };

/** A thread that ran this long without ending counts as healthy again: the back-off starts over. */
const STABLE_MS = 60_000;
/** Unanswered for this many ping timeouts, a thread is terminated (reported unhealthy from the first). */
const TERMINATE_AFTER_TIMEOUTS = 3;

interface Responsiveness {
  /** How long the thread has left a ping unanswered (0 when it answers). */
  silentMs(): number;
  /** Any message from the thread shows it runs. */
  answered(): void;
  stop(): void;
}

/**
 * Pings a ready thread and measures how long it stays silent; calls `onHung` once when the silence reaches
 * TERMINATE_AFTER_TIMEOUTS ping timeouts. Silence is measured on the front's clock only while the front itself
 * runs: after the front's own loop stood still (a pause, a long stall) the measurement starts over, since an
 * answer sent meanwhile may still be queued behind the timer that would judge it.
 */
function watchResponsiveness(t: Worker, timeoutMs: number, onHung: (silentMs: number) => void): Responsiveness {
  const tickMs = Math.max(25, Math.floor(timeoutMs / 4));
  let nextPing = 0;
  let pingSentAt: number | undefined;
  let silent = 0;
  let lastTick = Date.now();
  let hung = false;
  const timer = setInterval(() => {
    const now = Date.now();
    const frontStood = now - lastTick > 2 * tickMs;
    lastTick = now;
    if (pingSentAt === undefined || frontStood) {
      pingSentAt = now;
      send(t, { type: 'ping', id: nextPing++ });
      return;
    }
    silent = now - pingSentAt;
    if (!hung && silent >= TERMINATE_AFTER_TIMEOUTS * timeoutMs) {
      hung = true;
      onHung(silent);
    }
  }, tickMs);
  timer.unref();
  return {
    silentMs: () => silent,
    answered: () => {
      pingSentAt = undefined;
      silent = 0;
    },
    stop: () => clearInterval(timer),
  };
}

// eslint-disable-next-line max-lines-per-function -- the thread's life (start, messages, exit, restart) over one set of locals the handlers share
export function startWorkerThread(opts: WorkerThreadOptions): WorkerThread {
  const log = opts.logger.child({ component: 'worker-thread' });
  const { firstMs, maxMs } = opts.backoff ?? { firstMs: 1_000, maxMs: 30_000 };
  const readyTimeoutMs = opts.readyTimeoutMs ?? 180_000;
  const pingTimeoutMs = opts.pingTimeoutMs ?? 10_000;
  let thread: Worker | undefined;
  let watch: Responsiveness | undefined;
  let threadReady = false;
  let readySince = 0;
  let everReady = false;
  let stopping = false;
  let crashes = 0;
  let restartAt = 0;
  let backoffMs = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let nextId = 0;
  const pendingMetrics = new Map<number, (m: RegistryJson) => void>();
  const pendingStarts = new Map<number, { thread: Worker; settle: (a: StartAnswer) => void }>();
  const closedListeners: RunClosureListener[] = [];
  let settleFirst!: { resolve: () => void; reject: (err: Error) => void };
  const ready = new Promise<void>((resolve, reject) => (settleFirst = { resolve, reject }));
  // Awaited only once the front is built: a thread that ends sooner must not count as an unhandled rejection.
  ready.catch(() => undefined);

  const launch = (): void => {
    restartTimer = undefined;
    // Its stdout and stderr are relayed by this thread (node's default for workers): whole lines, one writer.
    const t = new Worker(entry(), { env: opts.env });
    thread = t;
    threadReady = false;
    const id = t.threadId;
    log.info({ workerThread: id }, 'worker thread started');
    const readyTimer = setTimeout(() => {
      log.error({ workerThread: id, readyTimeoutMs }, 'worker thread not ready in time: terminating it');
      void t.terminate();
    }, readyTimeoutMs);
    t.on('message', (msg: unknown) => {
      if (!isFromWorker(msg)) return;
      if (thread === t) watch?.answered();
      if (msg.type === 'ready') {
        clearTimeout(readyTimer);
        threadReady = true;
        readySince = Date.now();
        log.info({ workerThread: id }, 'worker thread ready');
        watch = watchResponsiveness(t, pingTimeoutMs, (silentMs) => {
          log.error({ workerThread: id, silentMs, pingTimeoutMs }, 'worker thread hung (it answers no ping): terminating it');
          void t.terminate();
        });
        if (!everReady) {
          everReady = true;
          settleFirst.resolve();
        }
      } else if (msg.type === 'metrics') {
        pendingMetrics.get(msg.id)?.(msg.metrics);
      } else if (msg.type === 'started') {
        pendingStarts.get(msg.id)?.settle({ ok: true, runId: msg.runId });
      } else if (msg.type === 'start-failed') {
        pendingStarts.get(msg.id)?.settle({ ok: false, failure: msg.failure });
      } else if (msg.type === 'run-closing') {
        for (const l of closedListeners) l.closing?.(msg.run);
      } else if (msg.type === 'run-closed') {
        for (const l of closedListeners) l.closed(msg.run);
      }
    });
    t.on('error', (err) => log.error({ workerThread: id, err }, 'worker thread failed'));
    t.once('exit', (code) => {
      clearTimeout(readyTimer);
      // Its unanswered starts may or may not have reached the server: their callers start them the ordinary way.
      for (const p of [...pendingStarts.values()])
        if (p.thread === t) p.settle({ ok: false, failure: { alreadyStarted: false, message: 'the worker thread ended' } });
      if (thread === t) {
        thread = undefined;
        threadReady = false;
        watch?.stop();
        watch = undefined;
      }
      if (stopping) return;
      if (!everReady) {
        settleFirst.reject(new Error(`the worker thread ended before it was ready (code ${code})`));
        return;
      }
      if (readySince && Date.now() - readySince >= STABLE_MS) crashes = 0;
      readySince = 0;
      const delay = Math.min(maxMs, firstMs * 2 ** crashes);
      crashes += 1;
      backoffMs = delay;
      restartAt = Date.now() + delay;
      log.error({ workerThread: id, code, restartInMs: delay, crashes }, 'worker thread ended: starting it again (its renders re-attach)');
      restartTimer = setTimeout(launch, delay);
    });
  };
  launch();

  return {
    ready,
    status: () => {
      const silentMs = watch?.silentMs() ?? 0;
      if (thread && threadReady && silentMs >= pingTimeoutMs)
        return {
          ok: false,
          detail: `not answering for ${silentMs} ms (thread ${thread.threadId}): terminated at ${TERMINATE_AFTER_TIMEOUTS * pingTimeoutMs} ms`,
          threadId: thread.threadId,
        };
      if (thread && threadReady) return { ok: true, detail: `running (thread ${thread.threadId})`, threadId: thread.threadId };
      if (thread) return { ok: false, detail: `starting (thread ${thread.threadId})`, threadId: thread.threadId };
      if (restartTimer)
        return {
          ok: false,
          detail: `restarting after ${crashes} crash(es) in a row: back-off ${backoffMs} ms, ${Math.max(0, restartAt - Date.now())} ms left`,
        };
      return { ok: false, detail: stopping ? 'stopped' : 'not running' };
    },
    metrics: (timeoutMs = 2_000) => {
      const t = thread;
      if (!t || !threadReady) return Promise.resolve(undefined);
      const id = nextId++;
      return new Promise<RegistryJson | undefined>((resolve) => {
        const timer = setTimeout(() => {
          pendingMetrics.delete(id);
          resolve(undefined);
        }, timeoutMs);
        pendingMetrics.set(id, (m) => {
          clearTimeout(timer);
          pendingMetrics.delete(id);
          resolve(m);
        });
        send(t, { type: 'metrics', id });
      });
    },
    startRender: (options) => {
      const t = thread;
      // A thread that leaves pings unanswered would leave the start waiting too: start it the ordinary way.
      if (!t || !threadReady || (watch?.silentMs() ?? 0) >= pingTimeoutMs) return Promise.reject(new Error('the worker thread is not answering'));
      const id = nextId++;
      return new Promise<string>((resolve, reject) => {
        const settle = (a: StartAnswer): void => {
          clearTimeout(timer);
          pendingStarts.delete(id);
          if (a.ok) resolve(a.runId);
          else reject(fromStartFailure(a.failure, options.workflowId));
        };
        const timer = setTimeout(
          () => settle({ ok: false, failure: { alreadyStarted: false, message: `no answer in ${START_TIMEOUT_MS} ms` } }),
          START_TIMEOUT_MS,
        );
        pendingStarts.set(id, { thread: t, settle });
        send(t, { type: 'start', id, start: toPlain(options) });
      });
    },
    onRunClosed: (listener) => {
      closedListeners.push(listener);
      return true;
    },
    stop: async () => {
      stopping = true;
      // A draining thread is bounded by stopTimeoutMs, not by pings.
      watch?.stop();
      clearTimeout(restartTimer);
      restartTimer = undefined;
      const t = thread;
      if (!t) return;
      const ended = new Promise<void>((resolve) => t.once('exit', () => resolve()));
      // Not ready yet: nothing has been handed to it that a drain would save.
      if (threadReady) send(t, { type: 'stop' });
      else void t.terminate();
      const killer = setTimeout(() => {
        log.warn({ workerThread: t.threadId, stopTimeoutMs: opts.stopTimeoutMs }, 'worker thread did not drain in time: terminating it');
        void t.terminate();
      }, opts.stopTimeoutMs);
      await ended;
      clearTimeout(killer);
      log.info({ workerThread: t.threadId }, 'worker thread stopped');
    },
  };
}

function send(t: Worker, msg: ToWorker): void {
  t.postMessage(msg);
}
