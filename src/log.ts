/** Structured logs (pino) on stdout; one logger per process, children per component. */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** `destination`: default pino's own (synchronous writes to fd 1); `start`'s worker thread passes its stdout. */
export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', name = 'comfy-durable', destination?: DestinationStream): Logger {
  const options = { name, level, base: { pid: process.pid } };
  return destination ? pino(options, destination) : pino(options);
}
