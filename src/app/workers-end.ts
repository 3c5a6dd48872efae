/** How a process (or `start`'s worker thread) ends when its Temporal workers end without being asked to. */
import type { Logger } from '../log.ts';

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
