/**
 * Prometheus metrics (prom-client), one registry per process.
 *
 * Who counts what: the HTTP front counts renders started; the worker counts render outcomes (completed,
 * failed by reason, duration) where the workflow ends, through a workflow sink (src/metrics/render-sinks.ts),
 * so a render that completes while no front waits (a front restart, an async client) is counted once; and it
 * counts what happens on the GPU (prompt attempts by outcome, stalls, escalations, re-uploads). In `start` mode the
 * worker is a child process of the front, and the front's `GET /metrics` merges the child's registry into its
 * own at scrape time (setPeerMetricsSource); with `api` and `worker` as separate processes
 * the worker serves its own registry on `METRICS_PORT` (see src/app/services.ts), and the front's backend
 * gauge reads the unhealthy markers the worker writes into the shared DATA_DIR (src/backends/health.ts).
 *
 * Module-level on purpose: prom-client metrics are registered once per name, and every component of a
 * process must increment the same counter objects.
 */
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const rendersStarted = new Counter({
  name: 'comfy_durable_renders_started_total',
  help: 'Renders started by this front (an Idempotency-Key retry that attaches is not a new render)',
  labelNames: ['model'] as const,
  registers: [registry],
});

export const renderResultsTold = new Counter({
  name: 'comfy_durable_render_results_told_total',
  help:
    'Render results this front waited for, by what told it first: its own workers (by="workers", src/renders/closed-runs.ts) or Temporal\'s history long poll ' +
    '(by="temporal"). by="workers" stays at 0 when the SDK could not be watched (an upgrade; the log says so)',
  labelNames: ['by'] as const,
  registers: [registry],
});

export const rendersCompleted = new Counter({
  name: 'comfy_durable_renders_completed_total',
  help: 'Renders that completed with images (counted by the worker when the workflow ends)',
  labelNames: ['model'] as const,
  registers: [registry],
});

export const rendersFailed = new Counter({
  name: 'comfy_durable_renders_failed_total',
  help: 'Renders that ended without images, by reason (failure type: ComfyValidation, ComfyStall, Cancelled, Timeout, ...; counted by the worker)',
  labelNames: ['model', 'reason'] as const,
  registers: [registry],
});

export const renderOutcomes = new Counter({
  name: 'comfy_durable_render_outcomes_total',
  help: 'Renders by what happened (counted by the worker when the workflow ends): completed, partial (interrupt or skip: an item stopped early), blank (an output of one colour, black = NaNs in the VAE), failed, cancelled',
  labelNames: ['model', 'outcome'] as const,
  registers: [registry],
});

export const renderDuration = new Histogram({
  name: 'comfy_durable_render_duration_seconds',
  help: 'Time from workflow run start to its outcome (measured by the worker)',
  labelNames: ['model', 'outcome'] as const,
  // Renders take seconds (schnell, small) to many minutes (Qwen at 2 MP, retries after a stall).
  buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 180, 300, 600, 900, 1200],
  registers: [registry],
});

export const promptAttempts = new Counter({
  name: 'comfy_durable_prompt_attempts_total',
  help: 'runPrompt attempts on a ComfyUI backend, by outcome (success, stall, lost, oom, execution_error, validation, unavailable, interrupted, cancelled, worker_shutdown, backend_unhealthy, error)',
  labelNames: ['backend', 'outcome'] as const,
  registers: [registry],
});

export const promptReattached = new Counter({
  name: 'comfy_durable_prompt_reattached_total',
  help: 'Attempts that re-attached to a prompt an earlier attempt had submitted instead of rendering again',
  labelNames: ['backend'] as const,
  registers: [registry],
});

export const promptStalls = new Counter({
  name: 'comfy_durable_prompt_stalls_total',
  help: 'Prompts that showed no event and no queue movement for the stall timeout, by the state they stalled in',
  labelNames: ['backend', 'state'] as const,
  registers: [registry],
});

export const backendEscalations = new Counter({
  name: 'comfy_durable_backend_escalations_total',
  help: 'Escalation steps after an interrupt did not stop a stalled prompt: free (POST /free), unhealthy (backend marked)',
  labelNames: ['backend', 'step'] as const,
  registers: [registry],
});

export const inputReuploads = new Counter({
  name: 'comfy_durable_input_reuploads_total',
  help: 'Times ComfyUI had lost an uploaded input image (LoadImage "Invalid image file") and it was uploaded again',
  labelNames: ['backend'] as const,
  registers: [registry],
});

/** Source of the backend gauge: which backends this process knows, and which are marked unhealthy. */
export interface BackendHealthSource {
  backends(): readonly { id: string }[];
  unhealthy(): Map<string, string>;
}

let healthSource: BackendHealthSource | undefined;

/** Set by the composition root; the gauge is computed at scrape time, so it is never stale. */
export function setBackendHealthSource(source: BackendHealthSource | undefined): void {
  healthSource = source;
}

new Gauge({
  name: 'comfy_durable_backend_healthy',
  help: '1 when the ComfyUI backend is usable, 0 while it is marked unhealthy (a stalled prompt survived interrupt and /free)',
  labelNames: ['backend'] as const,
  registers: [registry],
  collect() {
    this.reset();
    if (!healthSource) return;
    const marked = healthSource.unhealthy();
    for (const b of healthSource.backends()) this.set({ backend: b.id }, marked.has(b.id) ? 0 : 1);
  },
});

let blobStoreSize: (() => Promise<{ bytes: number; count: number }>) | undefined;

/** Set by the composition root (src/blobs/size.ts blobStoreSizer, over either store's inventory). */
export function setBlobStoreSizeSource(source: typeof blobStoreSize): void {
  blobStoreSize = source;
}

new Gauge({
  name: 'comfy_durable_blob_store_bytes',
  help: 'Bytes in the blob store (inputs and outputs of renders; see `renders prune` and RENDER_RETENTION_DAYS)',
  registers: [registry],
  async collect() {
    this.reset();
    if (blobStoreSize) this.set((await blobStoreSize()).bytes);
  },
});

new Gauge({
  name: 'comfy_durable_blob_store_blobs',
  help: 'Blobs in the blob store',
  registers: [registry],
  async collect() {
    this.reset();
    if (blobStoreSize) this.set((await blobStoreSize()).count);
  },
});

type RegistryJson = MetricObjectWithValues<MetricValue<string>>[];
let peerMetrics: (() => Promise<RegistryJson | undefined>) | undefined;

/**
 * `start` mode: the worker thread's registry (undefined while it restarts or does not answer), merged into
 * this one's as prom-client merges a cluster's workers: counters and histograms summed (each is counted in
 * one process only), the process metrics of the two processes summed (memory, CPU) or averaged (event-loop
 * lag), the start time omitted. A restarted worker's counters start again from zero, as a counter may.
 */
export function setPeerMetricsSource(source: typeof peerMetrics): void {
  peerMetrics = source;
}

export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  const peer = await peerMetrics?.();
  if (!peer) return { contentType: registry.contentType, body: await registry.metrics() };
  const merged = AggregatorRegistry.aggregate([await registry.getMetricsAsJSON(), peer]);
  return { contentType: merged.contentType, body: await merged.metrics() };
}
