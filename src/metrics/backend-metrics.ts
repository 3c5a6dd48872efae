/**
 * Per-backend GPU metrics, counted where the GPU is handed out (the worker's GpuPool and the runPrompt activity):
 *   comfy_durable_backend_busy_seconds_total / _idle_seconds_total{backend}  time each ComfyUI this worker serves
 *       spent running a prompt attempt / free; up to the scrape, so a GPU idle for an hour shows that hour
 *   comfy_durable_backend_busy{backend}  1 while an attempt holds it
 *   comfy_durable_gpu_queue_wait_seconds{priority}  how long a prompt attempt waited in the shared GPU queue
 *       (scheduled → started on a GPU worker), by Temporal priority key (1 most urgent … 5)
 * Busy share per GPU over a window: rate(busy_seconds_total[5m]) (1 = always busy).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from './metrics.ts';

interface BackendClock {
  busy: boolean;
  since: number;
  busyMs: number;
  idleMs: number;
}

const clocks = new Map<string, BackendClock>();
const now = (): number => performance.now();

function clock(backend: string): BackendClock {
  let c = clocks.get(backend);
  if (!c) {
    c = { busy: false, since: now(), busyMs: 0, idleMs: 0 };
    clocks.set(backend, c);
  }
  return c;
}

function settle(c: BackendClock, t: number): void {
  if (c.busy) c.busyMs += t - c.since;
  else c.idleMs += t - c.since;
  c.since = t;
}

/** A counter of each backend's busy or idle seconds, read off the clocks when Prometheus scrapes. */
function clockCounter(name: string, help: string, ms: (c: BackendClock) => number): Counter<'backend'> {
  return new Counter({
    name,
    help,
    labelNames: ['backend'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const t = now();
      for (const [backend, c] of clocks) {
        settle(c, t);
        this.inc({ backend }, ms(c) / 1000);
      }
    },
  });
}

clockCounter('comfy_durable_backend_busy_seconds_total', 'Seconds each ComfyUI backend served by this worker spent running prompt attempts', (c) => c.busyMs);
clockCounter('comfy_durable_backend_idle_seconds_total', 'Seconds each ComfyUI backend served by this worker was free (no prompt attempt)', (c) => c.idleMs);

const busyGauge = new Gauge({
  name: 'comfy_durable_backend_busy',
  help: '1 while a prompt attempt holds the ComfyUI backend, else 0',
  labelNames: ['backend'] as const,
  registers: [registry],
});

export const gpuQueueWait = new Histogram({
  name: 'comfy_durable_gpu_queue_wait_seconds',
  help: 'Time a prompt attempt waited in the shared GPU queue before a GPU worker took it, by priority key',
  labelNames: ['priority'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
  registers: [registry],
});

/** A backend this worker serves starts being tracked (idle) from now. */
export function trackBackend(backend: string): void {
  clock(backend);
  busyGauge.set({ backend }, 0);
}

export function backendBusy(backend: string, busy: boolean): void {
  const c = clock(backend);
  if (c.busy === busy) return;
  settle(c, now());
  c.busy = busy;
  busyGauge.set({ backend }, busy ? 1 : 0);
}

/** Busy and idle seconds so far (tests, /health-style reporting). */
export function backendTimes(backend: string): { busySeconds: number; idleSeconds: number } {
  const c = clock(backend);
  settle(c, now());
  return { busySeconds: c.busyMs / 1000, idleSeconds: c.idleMs / 1000 };
}
