/**
 * The worker thread's side of `start` mode (app/worker-thread.ts): `worker` mode run by a front in one of its
 * threads. It answers the front over the thread's port (ready, its metrics, stop); signals are the front's.
 */
// First: before anything loads the Temporal SDK (its bundler is not loaded into this thread).
import '../worker/no-inprocess-bundler.ts';
import { isMainThread, parentPort, threadId } from 'node:worker_threads';
import { loadConfig } from '../config/config.ts';
import { createLogger, type Logger } from '../log.ts';
import { registry } from '../metrics/metrics.ts';
import { runServices, type Running } from './services.ts';
import { exitWhenWorkersEnd } from './workers-end.ts';
import { isToWorker, type FromWorker } from './worker-ipc.ts';
import { toStartFailure } from '../renders/eager-start.ts';

function answerFront(port: NonNullable<typeof parentPort>, running: Running, logger: Logger, drainTimeoutMs: number): void {
  let stopping = false;
  const stop = (why: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'worker thread draining');
    // Bounded: a drain that hangs must not hold the front's shutdown (which terminates the thread anyway).
    setTimeout(() => {
      logger.warn('worker thread: drain took too long, ending');
      process.exit(1);
    }, drainTimeoutMs).unref();
    running.stop().then(
      () => {
        logger.info('worker thread drained');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'worker thread: error while stopping');
        process.exit(1);
      },
    );
  };
  const send = (msg: FromWorker): void => port.postMessage(msg);
  port.on('message', (msg: unknown) => {
    if (!isToWorker(msg)) return;
    if (msg.type === 'stop') stop('the front stops');
    else if (msg.type === 'ping') send({ type: 'pong', id: msg.id });
    else if (msg.type === 'start') {
      const { id } = msg;
      if (!running.startEagerly) send({ type: 'start-failed', id, failure: { alreadyStarted: false, message: 'no workers in this thread' } });
      else
        running.startEagerly(msg.start).then(
          (runId) => send({ type: 'started', id, runId }),
          (err: unknown) => send({ type: 'start-failed', id, failure: toStartFailure(err) }),
        );
    } else
      registry.getMetricsAsJSON().then(
        (metrics) => send({ type: 'metrics', id: msg.id, metrics }),
        (err: unknown) => logger.warn({ err }, 'worker thread: collecting metrics failed'),
      );
  });
  // Watched only in a thread with a workflow worker (not one of the GPU queues alone).
  if (running.onRunClosed && !running.onRunClosed({ closing: (run) => send({ type: 'run-closing', run }), closed: (run) => send({ type: 'run-closed', run }) }))
    logger.warn("the SDK's native worker was not found to watch: the front's renders wait on Temporal's history long poll");
  // In a thread, process.exit ends the thread only: the front sees it end and starts another.
  exitWhenWorkersEnd(running.done, logger, () => stopping);
  send({ type: 'ready' });
}

async function main(port: NonNullable<typeof parentPort>): Promise<void> {
  const config = loadConfig();
  // Through this thread's stdout, which the front relays line by line: one writer on the pipe, lines whole.
  const logger = createLogger(config.LOG_LEVEL, 'comfy-durable-worker', process.stdout).child({ workerThread: threadId });
  const running = await runServices('worker', config, logger, { supervised: true });
  logger.info({ temporal: running.temporalAddress }, 'worker thread ready');
  answerFront(port, running, logger, config.SHUTDOWN_GRACE_MS + 20_000);
}

if (!isMainThread && parentPort) await main(parentPort);
