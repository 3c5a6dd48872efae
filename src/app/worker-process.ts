/**
 * `start` mode's worker process. The Temporal workers (workflows, the prompt activities and their heartbeats)
 * run in a child node process running `worker` mode on the same code, configuration and Temporal server, so
 * nothing the front does on its event loop (parsing a request, collecting an image-sized heap) delays a
 * heartbeat, and an out-of-memory abort or a long stall in one process does not take the other down.
 *
 * The front supervises it:
 * - start-up waits for the child's first "ready"; a child that dies before it fails the start;
 * - a child that dies later (crash, OOM, SIGKILL) is started again after a back-off (1 s doubling to 30 s,
 *   reset once a child has run for a minute); its renders' next attempts re-attach to their prompts;
 * - `stop` asks the child to drain over IPC and waits for it to exit (killed after `stopTimeoutMs`);
 * - the child needs no signal of its own: it ignores SIGINT/SIGTERM (a terminal's Ctrl+C or a supervisor's
 *   SIGTERM to the process group reaches both, and the front decides the order), and it drains and exits when
 *   the IPC channel closes, i.e. when the front is gone, even SIGKILLed. The front SIGKILLs it on its own exit.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.ts';
import { childNodeArgs } from '../worker/child-node-args.ts';
import { isFromWorker, type RegistryJson, type ToWorker } from './worker-ipc.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const MAIN = path.join(here, '..', 'cli', `main${import.meta.url.endsWith('.js') ? '.js' : '.ts'}`);
/** The CLI flag that makes `worker` mode answer to a front over IPC (src/cli/main.ts). */
export const SUPERVISED_FLAG = '--supervised';

export interface WorkerProcessOptions {
  /** The child's environment: the front's, with TEMPORAL_ADDRESS pointing at the server the front uses. */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** How long a drain may take before the child is killed (its SHUTDOWN_GRACE_MS plus closing). */
  stopTimeoutMs: number;
  /** How long a child may take to be ready (bundling the workflows next to a CPU hog takes a while). */
  readyTimeoutMs?: number;
  backoff?: { firstMs: number; maxMs: number };
}

export interface WorkerProcessStatus {
  ok: boolean;
  detail: string;
  pid?: number;
}

export interface WorkerProcess {
  /** Resolves when the first child is ready; rejects if it exits or times out before. */
  ready: Promise<void>;
  status(): WorkerProcessStatus;
  /** The running child's metrics registry, or undefined when there is none or it does not answer in time. */
  metrics(timeoutMs?: number): Promise<RegistryJson | undefined>;
  /** Drain the child and wait for it to exit; no restart after this. */
  stop(): Promise<void>;
}

/** A child that ran this long without dying counts as healthy again: the back-off starts over. */
const STABLE_MS = 60_000;

export function startWorkerProcess(opts: WorkerProcessOptions): WorkerProcess {
  const log = opts.logger.child({ component: 'worker-process' });
  const { firstMs, maxMs } = opts.backoff ?? { firstMs: 1_000, maxMs: 30_000 };
  const readyTimeoutMs = opts.readyTimeoutMs ?? 180_000;
  let child: ChildProcess | undefined;
  let childReady = false;
  let readySince = 0;
  let everReady = false;
  let stopping = false;
  let crashes = 0;
  let restartAt = 0;
  let backoffMs = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let nextId = 0;
  const pendingMetrics = new Map<number, (m: RegistryJson) => void>();
  let settleFirst!: { resolve: () => void; reject: (err: Error) => void };
  const ready = new Promise<void>((resolve, reject) => (settleFirst = { resolve, reject }));
  // Awaited only once the front is built: a child that dies sooner must not count as an unhandled rejection.
  ready.catch(() => undefined);
  const killOnExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  const launch = (): void => {
    restartTimer = undefined;
    const c = fork(MAIN, ['worker', SUPERVISED_FLAG], { execArgv: childNodeArgs(), env: opts.env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    // Its lines are written again from here, whole: two processes writing one pipe can cut each other's
    // lines where a write is longer than the pipe's atomic size (a JSON log line with a stack).
    if (c.stdout) relayLines(c.stdout, process.stdout);
    if (c.stderr) relayLines(c.stderr, process.stderr);
    child = c;
    childReady = false;
    log.info({ workerPid: c.pid }, 'worker process started');
    const readyTimer = setTimeout(() => {
      log.error({ workerPid: c.pid, readyTimeoutMs }, 'worker process not ready in time: killing it');
      c.kill('SIGKILL');
    }, readyTimeoutMs);
    c.on('message', (msg: unknown) => {
      if (!isFromWorker(msg)) return;
      if (msg.type === 'ready') {
        clearTimeout(readyTimer);
        childReady = true;
        readySince = Date.now();
        log.info({ workerPid: c.pid }, 'worker process ready');
        if (!everReady) {
          everReady = true;
          settleFirst.resolve();
        }
      } else {
        pendingMetrics.get(msg.id)?.(msg.metrics);
      }
    });
    c.on('error', (err) => log.error({ workerPid: c.pid, err }, 'worker process error'));
    c.once('exit', (code, signal) => {
      clearTimeout(readyTimer);
      if (child === c) {
        child = undefined;
        childReady = false;
      }
      if (stopping) return;
      if (!everReady) {
        settleFirst.reject(new Error(`the worker process exited before it was ready (code ${code}, signal ${signal})`));
        return;
      }
      if (readySince && Date.now() - readySince >= STABLE_MS) crashes = 0;
      readySince = 0;
      const delay = Math.min(maxMs, firstMs * 2 ** crashes);
      crashes += 1;
      backoffMs = delay;
      restartAt = Date.now() + delay;
      log.error({ workerPid: c.pid, code, signal, restartInMs: delay, crashes }, 'worker process died: starting it again (its renders re-attach)');
      restartTimer = setTimeout(launch, delay);
    });
  };
  launch();

  return {
    ready,
    status: () => {
      if (child && childReady) return { ok: true, detail: `running (pid ${child.pid})`, pid: child.pid! };
      if (child) return { ok: false, detail: `starting (pid ${child.pid})`, pid: child.pid! };
      if (restartTimer)
        return {
          ok: false,
          detail: `restarting after ${crashes} crash(es) in a row: back-off ${backoffMs} ms, ${Math.max(0, restartAt - Date.now())} ms left`,
        };
      return { ok: false, detail: stopping ? 'stopped' : 'not running' };
    },
    metrics: (timeoutMs = 2_000) => {
      const c = child;
      if (!c || !childReady || !c.connected) return Promise.resolve(undefined);
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
        send(c, { type: 'metrics', id });
      });
    },
    stop: async () => {
      stopping = true;
      clearTimeout(restartTimer);
      restartTimer = undefined;
      const c = child;
      if (c && c.exitCode === null && c.signalCode === null) {
        const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
        // Not ready yet: nothing has been handed to it that a drain would save.
        if (childReady && c.connected) send(c, { type: 'stop' });
        else c.kill('SIGKILL');
        const killer = setTimeout(() => {
          log.warn({ workerPid: c.pid, stopTimeoutMs: opts.stopTimeoutMs }, 'worker process did not drain in time: killing it');
          c.kill('SIGKILL');
        }, opts.stopTimeoutMs);
        await exited;
        clearTimeout(killer);
      }
      process.off('exit', killOnExit);
    },
  };
}

function send(c: ChildProcess, msg: ToWorker): void {
  // The channel may close between the check and the send (the child dying): its exit handler takes over.
  c.send(msg, () => undefined);
}

function relayLines(from: Readable, to: Writable): void {
  createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(`${line}\n`));
}
