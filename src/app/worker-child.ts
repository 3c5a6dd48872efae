/**
 * The worker process's side of `start` mode (app/worker-process.ts): `worker` mode run by a front. It answers
 * the front over IPC (ready, its metrics, stop) and takes no signal itself: the front orders the shutdown.
 */
import type { Logger } from '../log.ts';
import { registry } from '../metrics/metrics.ts';
import type { Running } from './services.ts';
import { isToWorker, type FromWorker } from './worker-ipc.ts';

export function answerFront(running: Running, logger: Logger, opts: { drainTimeoutMs: number }): void {
  let stopping = false;
  const stop = (why: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'worker process draining');
    // Bounded: with the front gone, the Temporal server it ran may be gone too.
    setTimeout(() => {
      logger.warn('worker process: drain took too long, exiting');
      process.exit(1);
    }, opts.drainTimeoutMs).unref();
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'worker process: error while stopping');
        process.exit(1);
      },
    );
  };
  const send = (msg: FromWorker): void => {
    if (process.connected) process.send?.(msg, undefined, {}, () => undefined);
  };
  process.on('message', (msg: unknown) => {
    if (!isToWorker(msg)) return;
    if (msg.type === 'stop') stop('the front stops');
    else
      registry.getMetricsAsJSON().then(
        (metrics) => send({ type: 'metrics', id: msg.id, metrics }),
        (err: unknown) => logger.warn({ err }, 'worker process: collecting metrics failed'),
      );
  });
  process.on('disconnect', () => stop('the front process is gone'));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => logger.debug({ signal }, 'worker process: signal left to the front, which stops this process'));
  }
  exitWhenWorkersEnd(running.done, logger, () => stopping);
  // The front may already be gone (killed while this process started).
  if (!process.connected) stop('the front process is gone');
  else send({ type: 'ready' });
}

/** Workers that end without being asked to (or fail) end the process: its supervisor starts it again. */
export function exitWhenWorkersEnd(done: Promise<unknown>, logger: Logger, stopping: () => boolean): void {
  done.then(
    () => {
      if (!stopping()) {
        logger.error('workers stopped unexpectedly');
        process.exit(1);
      }
    },
    (err: unknown) => {
      logger.error({ err }, 'worker failed');
      process.exit(1);
    },
  );
}
