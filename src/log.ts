/** Structured logs (pino) on stdout; one logger per process, children per component. */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', name = 'comfy-durable'): Logger {
  return pino({ name, level, base: { pid: process.pid } });
}
