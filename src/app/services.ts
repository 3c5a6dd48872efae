/**
 * Composition root: builds the pieces each process mode needs from the validated config.
 * `start` = embedded Temporal (unless TEMPORAL_ADDRESS) + front + a worker thread (`worker` mode in a
 * worker_thread of the same process, app/worker-thread.ts); `worker` and `api` run one part.
 */
import type { FastifyInstance } from 'fastify';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { BlobStore } from '../blobs/store.ts';
import type { Tracing } from '../tracing/tracing.ts';
import type { WorkerTracing } from '../tracing/temporal.ts';
import type { GpuLeaseHolder } from '../gpu/lease-holder.ts';
import type { LeaseServer } from '../gpu/lease-server.ts';
import { TEMPORAL_UI_PATH } from '../api/temporal-ui-proxy.ts';
import { blobStoreFromConfig } from '../blobs/from-config.ts';
import { ComfyClient } from '../comfyui/client.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { checkModelConfig } from './model-config.ts';
import { getProfile } from '../models/registry.ts';
import type { Backend } from '../contracts/render.ts';
import { findTemporalBinary } from '../temporal/binary.ts';
import { connectClient } from '../temporal/client.ts';
import { startDevServer, type DevServer } from '../temporal/dev-server.ts';
import { ensureSearchAttributes } from '../temporal/ensure-search-attributes.ts';
import { backendsFromUrls, gpuBackends } from '../backends/backends.ts';
import { BackendHealth } from '../backends/health.ts';
import type { WorkerSet } from '../worker/worker.ts';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '../tracing/tracing.ts';
import { setBackendHealthSource, setBlobStoreSizeSource, setPeerMetricsSource } from '../metrics/metrics.ts';
import { blobStoreSizer } from '../blobs/size.ts';
import { ensureNamespaceRetention } from '../retention/namespace-retention.ts';
import { ensureRetentionSchedule } from '../retention/schedule.ts';
import { Client, Connection } from '@temporalio/client';
import { startMetricsServer, type MetricsServer } from '../metrics/server.ts';
import path from 'node:path';
import type { RenderService as RenderServiceT } from '../renders/render-service.ts';
import { anyBackendUsable, describeBackends, freeVram, startGpuEntryServer, startLeaseHolder } from '../gpu/gpu-entry.ts';
import { gatedHealth, watchProxy } from '../gpu/lease-server.ts';
import { startWorkerThread, type WorkerThread } from './worker-thread.ts';
import { clientStarter, startOnConnection, type PlainStartOptions } from '../renders/eager-start.ts';

/** `gpu`: the GPU worker inside a model-swapping proxy's GPU entry (docs/llama-swap.md). */
export type Mode = 'start' | 'worker' | 'api' | 'gpu';

/**
 * Printed when TEMPORAL_UI is on. Through the front the UI has the front's guards; what remains is the UI
 * process's own loopback port (no Host check, no login), and without API_TOKEN the front's path is open to
 * every local process, as the API itself is.
 */
export function temporalUiWarning(config: Pick<Config, 'API_TOKEN'>, uiProcess: string): string {
  return (
    `TEMPORAL_UI is on: the Temporal Web UI is served at /temporal/ behind the front's Host check${config.API_TOKEN ? ' and API_TOKEN' : ' (no API_TOKEN: any local process can read and terminate every render through it)'}; ` +
    `the UI process itself listens on ${uiProcess} with no login and no Host check, reachable from this machine only`
  );
}

export interface Running {
  temporalAddress: string;
  /** The embedded Temporal UI, through the front (`…/temporal/`). */
  uiUrl?: string;
  uiWarning?: string;
  apiUrl?: string;
  stop(): Promise<void>;
  /** Resolves when the workers stop on their own (e.g. a fatal error). */
  done: Promise<void>;
  /** A worker thread's workers: starts its front's renders eagerly on their connection (renders/eager-start.ts). */
  startEagerly?: (plain: PlainStartOptions) => Promise<string>;
  /** A worker thread's workers: tells its front of each run they complete, as sent and as closed (worker/run-closures.ts). */
  onRunClosed?: WorkerSet['onRunClosed'];
}

export function comfyClients(backends: Backend[], logger: Logger): Map<string, ComfyClient> {
  // A socket ahead is opened only once a client takes one for a prompt: the workers' clients, not the front's.
  return new Map(backends.map((b) => [b.id, new ComfyClient({ baseUrl: b.url, logger: logger.child({ backend: b.id }), keepSocketAhead: true })]));
}

export interface ServiceOptions {
  /** Trace into this exporter (tests), whatever the OTLP configuration. */
  spanExporter?: SpanExporter;
  /**
   * `start`: run the workers on the front's own event loop instead of in a worker thread. For tests and benches that observe the workers from here (spans into an in-memory exporter,
   * model profiles registered at run time, this process's memory); the service itself never does.
   */
  workersInProcess?: boolean;
  /** `start`: the environment the worker thread reads its configuration from (default: this process's). */
  workerEnv?: NodeJS.ProcessEnv;
  /** `worker`: run by a `start` front in its worker thread, which serves the metrics and the gauges it shares (app/worker-thread-main.ts). */
  supervised?: boolean;
}

/** Tracing and its Temporal interceptors, loaded only when tracing is on. */
interface Telemetry {
  tracing: Tracing | undefined;
  clientInterceptors: (() => WorkflowClientInterceptor[]) | undefined;
  workerTracing: ((tracing: Tracing) => WorkerTracing) | undefined;
}

/** What every process mode builds: the ComfyUIs, the blob store and the backends' health marks. */
interface Shared {
  backends: Backend[];
  clients: Map<string, ComfyClient>;
  blobs: BlobStore;
  health: BackendHealth;
}

/** The Temporal server this process talks to (and runs, when embedded), and its client. */
interface Temporal {
  address: string;
  devServer: DevServer | undefined;
  client: Client;
  connection: Connection;
}

/** The Temporal workers running in this process (`worker`, `gpu`, or `start` with workersInProcess). */
interface Workers {
  set: WorkerSet;
  done: Promise<void>;
  stopProbing: () => void;
  /** Hands the attempts waiting in this worker for a ComfyUI back to the shared queue. */
  handBackWaiting: (why: string) => void;
  metricsServer: MetricsServer | undefined;
}

/** The HTTP front (`start`, `api`), listening. */
interface Front {
  api: FastifyInstance;
  apiUrl: string;
  renders: RenderServiceT;
  uiUrl: string | undefined;
  uiWarning: string | undefined;
  proxyWatch: { stop(): void } | undefined;
}

/** Everything runServices started, in start order; stopServices stops them in the SIGTERM order. */
interface Started {
  telemetry: Telemetry;
  /** Mode `gpu`: the GPU entry's lease server, answering the proxy's readiness check from the start. */
  leaseServer: LeaseServer | undefined;
  temporal: Temporal;
  shared: Shared;
  workerThread: WorkerThread | undefined;
  workers: Workers | undefined;
  /** A front behind a model-swapping proxy: holds the GPU lease while renders wait. */
  leaseHolder: GpuLeaseHolder | undefined;
  front: Front | undefined;
}

export async function runServices(mode: Mode, config: Config, logger: Logger, opts: ServiceOptions = {}): Promise<Running> {
  // Before any client or worker exists: they pick the global tracer provider up when they make spans.
  const telemetry = await startTelemetry(mode, config, logger, opts);
  checkModelConfig(config);
  // Mode `gpu` answers the proxy's readiness check (503 until the worker polls) from the start.
  const leaseServer = mode === 'gpu' ? await startGpuEntryServer(config, logger) : undefined;
  const server = await temporalServer(mode, config, logger);
  const shared = await sharedPieces(config, logger, opts);
  const { client, connection } = await connectClient(
    server.address,
    config.TEMPORAL_NAMESPACE,
    telemetry.clientInterceptors ? { workflowInterceptors: telemetry.clientInterceptors() } : {},
  );
  await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE, logger);
  const temporal: Temporal = { ...server, client, connection };
  // The worker thread starts now; the front is built meanwhile and listens once the worker is ready.
  const workerThread = mode === 'start' && !opts.workersInProcess ? startWorkersThread(server.address, config, logger, opts) : undefined;
  const runsWorkers = (mode === 'start' && opts.workersInProcess) || mode === 'worker' || mode === 'gpu';
  const workers = runsWorkers ? await startWorkers(mode, config, logger, opts, { telemetry, leaseServer, temporal, shared }) : undefined;
  const hasFront = mode === 'start' || mode === 'api';
  const leaseHolder = hasFront
    ? startLeaseHolder(
        config,
        client,
        logger,
        anyBackendUsable(shared.backends, shared.clients, () => shared.health.unhealthy(shared.backends)),
      )
    : undefined;
  const front = hasFront ? await startFront(config, logger, { telemetry, temporal, shared, workerThread, workers, leaseHolder }) : undefined;
  const started: Started = { telemetry, leaseServer, temporal, shared, workerThread, workers, leaseHolder, front };
  return {
    temporalAddress: server.address,
    ...(workers && opts.supervised
      ? { startEagerly: startOnConnection(workers.set.connection, config.TEMPORAL_NAMESPACE), onRunClosed: workers.set.onRunClosed }
      : {}),
    uiUrl: front?.uiUrl,
    uiWarning: front?.uiWarning,
    apiUrl: front?.apiUrl,
    done: workers?.done ?? new Promise(() => undefined),
    stop: () => stopServices(started, config, logger),
  };
}

/**
 * Tracing on (OTLP configured, or a test's exporter) or off. The Temporal workers and the HTTP front each load only
 * where they run (RSS: the SDK's worker runtime is tens of MB a `start` front does not need, and Fastify with every
 * route the same in its worker thread); the tracing interceptors likewise only when tracing is on.
 */
async function startTelemetry(mode: Mode, config: Config, logger: Logger, opts: ServiceOptions): Promise<Telemetry> {
  const tracing = await startTracing(config, { mode, ...(opts.spanExporter ? { exporter: opts.spanExporter } : {}) });
  if (!tracing) return { tracing, clientInterceptors: undefined, workerTracing: undefined };
  logger.info({ mode }, 'OpenTelemetry tracing on');
  const { clientTracingInterceptors, workerTracing } = await import('../tracing/temporal.ts');
  return { tracing, clientInterceptors: clientTracingInterceptors, workerTracing };
}

/** TEMPORAL_ADDRESS when set; else `start` runs the embedded dev server (with the namespace's retention) and the others expect one on the default port. */
async function temporalServer(mode: Mode, config: Config, logger: Logger): Promise<{ address: string; devServer: DevServer | undefined }> {
  if (config.TEMPORAL_ADDRESS) return { address: config.TEMPORAL_ADDRESS, devServer: undefined };
  if (mode !== 'start') return { address: '127.0.0.1:7233', devServer: undefined };
  const devServer = await startDevServer({
    binary: findTemporalBinary(config.TEMPORAL_CLI_PATH),
    dbFile: config.temporalDbFile,
    port: config.TEMPORAL_PORT,
    uiPort: config.TEMPORAL_UI_PORT,
    ui: config.TEMPORAL_UI,
    uiPublicPath: TEMPORAL_UI_PATH,
    namespace: config.TEMPORAL_NAMESPACE,
    logger,
  });
  await withConnection(devServer.address, (c) => ensureNamespaceRetention(c, config.TEMPORAL_NAMESPACE, config.RENDER_RETENTION_DAYS, logger));
  return { address: devServer.address, devServer };
}

async function sharedPieces(config: Config, logger: Logger, opts: ServiceOptions): Promise<Shared> {
  const backends = backendsFromUrls(config.COMFYUI_URL);
  const clients = comfyClients(backends, logger);
  const blobs = await blobStoreFromConfig(config);
  // Unhealthy-backend marks live in DATA_DIR, which front and worker share (as they share blobs): a front
  // in `api` mode sees what the worker's escalation decided.
  const health = new BackendHealth(config.dataDir, logger.child({ component: 'backend-health' }));
  if (!opts.supervised) {
    // Listing a bucket costs a request per thousand objects: size an S3 store less often than a local directory.
    setBlobStoreSizeSource(blobStoreSizer(blobs, config.BLOB_STORE === 's3' ? 15 * 60_000 : 60_000));
    setBackendHealthSource({ backends: () => backends, unhealthy: () => health.unhealthy(backends) });
  }
  return { backends, clients, blobs, health };
}

/** `start`: the workers in a worker thread of this process (app/worker-thread.ts), whose metrics this process serves. */
function startWorkersThread(address: string, config: Config, logger: Logger, opts: ServiceOptions): WorkerThread {
  const workerThread = startWorkerThread({
    env: { ...(opts.workerEnv ?? process.env), TEMPORAL_ADDRESS: address },
    logger,
    stopTimeoutMs: config.SHUTDOWN_GRACE_MS + 30_000,
    pingTimeoutMs: config.WORKER_THREAD_PING_TIMEOUT_MS,
  });
  setPeerMetricsSource(() => workerThread.metrics());
  return workerThread;
}

/**
 * The Temporal workers of this process, running: the render and webhook workers (only the GPU one in a GPU entry),
 * the retention schedule ensured, marked backends probed, and (unsupervised, not `start`) the metrics port.
 */
async function startWorkers(
  mode: Mode,
  config: Config,
  logger: Logger,
  opts: ServiceOptions,
  { telemetry, leaseServer, temporal, shared }: Pick<Started, 'telemetry' | 'leaseServer' | 'temporal' | 'shared'>,
): Promise<Workers> {
  const [{ Runtime }, { createActivities }, { GpuPool }, { bundleWorkflowsInChild, createWorkers, workflowInterceptorModules }] = await Promise.all([
    import('@temporalio/worker'),
    import('../activities/index.ts'),
    import('../backends/gpu-pool.ts'),
    import('../worker/worker.ts'),
  ]);
  // We install our own signal handling (graceful drain, second signal exits); the SDK must not race it.
  Runtime.install({ shutdownSignals: [], logger: undefined });
  const { backends, clients, health, blobs } = shared;
  const served = gpuBackends(backends, config.GPU_BACKENDS);
  // In the GPU entry, prompts are taken only while a front holds the lease through the proxy.
  const pool = new GpuPool(served, leaseServer ? gatedHealth(health, leaseServer.gate) : health, {
    lookahead: config.GPU_DISPATCH_LOOKAHEAD,
    maxPassOverMs: config.GPU_MAX_PASS_OVER_MS,
    // Without the lease no prompt starts, but the lease comes back: attempts waiting here keep their place.
    ...(leaseServer ? { paused: () => !leaseServer.gate.held() } : {}),
  });
  leaseServer?.gate.onChange(() => pool.recheck());
  leaseServer?.setBusyProbe(() => pool.busy());
  leaseServer?.setBackendsProbe(describeBackends(served, clients, () => health.unhealthy(served)));
  const activities = createActivities(
    {
      config,
      blobs,
      backends,
      clients,
      health,
      logger: logger.child({ component: 'activities' }),
      temporal: { client: temporal.client, namespace: config.TEMPORAL_NAMESPACE },
      // The proxy gives the GPU on once this entry exits: no prompt may outlive it (activities/run-prompt.ts).
      ...(mode === 'gpu' ? { stopPromptOnShutdown: true } : {}),
    },
    pool,
  );
  const { tracing, workerTracing } = telemetry;
  const traced = tracing && workerTracing ? workerTracing(tracing) : undefined;
  const set = await createWorkers({
    address: temporal.address,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    backends: served,
    pool,
    activities,
    webhookSlots: config.WEBHOOK_MAX_CONCURRENT,
    ...(mode === 'gpu'
      ? { general: false }
      : { workflowBundlePath: await bundleWorkflowsInChild(path.join(config.dataDir, 'tmp'), workflowInterceptorModules(traced)) }),
    ...(traced ? { tracing: traced } : {}),
    ...(opts.supervised ? { sandboxOnThisThread: true, workflowStackTraces: config.WORKFLOW_STACK_TRACES } : {}),
    logger,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
  });
  const done = set.run();
  const stopProbing = await afterWorkersRun(config, logger, { temporal, shared, leaseServer });
  const metricsServer =
    mode !== 'start' && !opts.supervised && config.METRICS_PORT !== undefined
      ? await startMetricsServer({ host: config.METRICS_HOST, port: config.METRICS_PORT, token: config.API_TOKEN, logger })
      : undefined;
  return { set, done, stopProbing, handBackWaiting: (why) => pool.handBack(why), metricsServer };
}

/** Once the workers poll: the retention schedule, probing of marked backends, and the GPU entry's readiness. Returns the probe's stop. */
async function afterWorkersRun(
  config: Config,
  logger: Logger,
  { temporal, shared, leaseServer }: Pick<Started, 'temporal' | 'shared' | 'leaseServer'>,
): Promise<() => void> {
  // Every worker ensures it; all but the first find it there. A failure here must not stop rendering.
  await ensureRetentionSchedule(temporal.client, { taskQueue: config.TEMPORAL_TASK_QUEUE, everyMs: config.RENDER_PRUNE_INTERVAL, logger }).catch(
    (err: unknown) => logger.error({ err }, 'could not create the retention schedule: renders and blobs will not be pruned automatically'),
  );
  // A marked backend recovers without waiting for a render to try it: probe it while it is marked.
  const { backends, clients, health } = shared;
  const stopProbing = health.startProbing(backends, (b) => clients.get(b.id), Math.max(1_000, Math.min(10_000, config.POLL_INTERVAL_MS * 5)));
  leaseServer?.setReady(true);
  return stopProbing;
}
/** What the front is built from: the parts started before it. */
type FrontParts = Pick<Started, 'telemetry' | 'temporal' | 'shared' | 'workerThread' | 'workers' | 'leaseHolder'>;

/**
 * The HTTP front, listening once the worker thread (if any) is ready; behind a model-swapping proxy it watches
 * the proxy stop. A worker thread that fails to start stops what was started and fails the start.
 */
async function startFront(config: Config, logger: Logger, parts: FrontParts): Promise<Front> {
  const { temporal, workerThread, leaseHolder } = parts;
  const { api, renders } = await buildFront(config, logger, parts);
  if (workerThread) {
    try {
      await workerThread.ready;
    } catch (err) {
      await api.close();
      await temporal.connection.close().catch(() => undefined);
      await temporal.devServer?.stop();
      throw err;
    }
  }
  const apiUrl = await api.listen({ host: config.HOST, port: config.PORT });
  let proxyWatch: Front['proxyWatch'];
  if (leaseHolder && config.GPU_LEASE_URL) {
    // The proxy stopping (llama-swap closes its listener, waits 30 s for the requests in flight, then SIGKILLs):
    // release the lease and answer every waiting client now, so its wait ends early and it stops us with SIGTERM.
    proxyWatch = watchProxy(
      new URL(config.GPU_LEASE_URL).host,
      () => {
        void leaseHolder.stop();
        renders.abortWaits('the proxy in front of this service is stopping');
      },
      logger,
    );
  }
  const uiProcess = temporal.devServer?.uiUrl;
  if (!uiProcess) return { api, apiUrl, renders, uiUrl: undefined, uiWarning: undefined, proxyWatch };
  const uiUrl = `${apiUrl}${TEMPORAL_UI_PATH}/`;
  const uiWarning = temporalUiWarning(config, uiProcess);
  logger.warn({ uiUrl, uiProcess }, uiWarning);
  return { api, apiUrl, renders, uiUrl, uiWarning, proxyWatch };
}

/** The front's Fastify server (not listening yet) and the render service its routes submit through. */
async function buildFront(config: Config, logger: Logger, parts: FrontParts): Promise<{ api: FastifyInstance; renders: RenderServiceT }> {
  const { telemetry, temporal, shared, workerThread, leaseHolder } = parts;
  const [{ buildServer }, { OptionsStore }, { ComfyCatalog }] = await Promise.all([
    import('../api/server.ts'),
    import('../api/options-store.ts'),
    import('../api/comfy-catalog.ts'),
  ]);
  const { backends, clients, health, blobs } = shared;
  const defaultProfile = getProfile(config.DEFAULT_MODEL);
  const renders = await renderService(config, logger, parts);
  const api = await buildServer({
    config,
    logger,
    blobs,
    // Workers in this process (tests): renders start eagerly on the worker's connection (RenderService).
    // Every front builds the graphs itself (renders/submit.ts), with the configuration it shares with its workers.
    renders,
    tracing: telemetry.tracing !== undefined,
    options: new OptionsStore(path.join(config.dataDir, 'options.json'), {
      sd_model_checkpoint: defaultProfile?.title ?? config.DEFAULT_MODEL,
    }),
    health: {
      temporal: temporal.client,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      backends,
      probeComfy: (b) => clients.get(b.id)!.systemStats(),
      unhealthy: () => health.unhealthy(backends),
      ...(workerThread ? { workerThread: () => workerThread.status() } : {}),
    },
    catalog: new ComfyCatalog({
      objectInfo: (cls) => clients.get(backends[0]!.id)!.objectInfo(cls),
      allObjectInfo: () => clients.get(backends[0]!.id)!.objectInfo(),
      systemStats: () => clients.get(backends[0]!.id)!.systemStats(),
    }),
    ...(temporal.devServer?.uiUrl ? { temporalUi: { upstream: temporal.devServer.uiUrl } } : {}),
    ...(leaseHolder ? { gpuLease: leaseHolder } : {}),
  });
  return { api, renders };
}

/**
 * Renders start eagerly on the workers' connection: theirs in this thread, or the worker thread's through its port
 * (not with tracing on: the start's span context could not cross the port); otherwise through the front's client.
 * Those workers tell the front when a render they completed is closed (renders/closed-runs.ts).
 */
async function renderService(
  config: Config,
  logger: Logger,
  parts: Pick<Started, 'telemetry' | 'temporal' | 'workers' | 'workerThread'>,
): Promise<RenderServiceT> {
  const { telemetry, temporal, workers, workerThread } = parts;
  const [{ RenderService }, { ClosedRuns }] = await Promise.all([import('../renders/render-service.ts'), import('../renders/closed-runs.ts')]);
  const closedRuns = new ClosedRuns();
  const told = workers ? workers.set.onRunClosed(closedRuns) : workerThread ? workerThread.onRunClosed(closedRuns) : false;
  if ((workers || workerThread) && !told) logger.warn("the SDK's native worker was not found to watch: renders' results wait on Temporal's history long poll");
  const { clientInterceptors } = telemetry;
  const eager = workers
    ? clientStarter(
        new Client({
          connection: workers.set.connection,
          namespace: config.TEMPORAL_NAMESPACE,
          ...(clientInterceptors ? { interceptors: { workflow: clientInterceptors() } } : {}),
        }),
      )
    : workerThread && !telemetry.tracing
      ? workerThread.startRender
      : undefined;
  return new RenderService(temporal.client, config.TEMPORAL_TASK_QUEUE, eager, told ? closedRuns : undefined);
}

/**
 * The SIGTERM order: stop taking requests, drain the workers (in-flight activities get the grace time and are
 * retried elsewhere if cut), then stop the embedded server; tracing last.
 */
async function stopServices(started: Started, config: Config, logger: Logger): Promise<void> {
  const { telemetry, leaseServer, temporal, shared, workerThread, workers, leaseHolder, front } = started;
  front?.proxyWatch?.stop();
  // Behind a proxy that stops us, the GPU entry is being stopped too: a client still waiting after the grace
  // gets a retryable 503 rather than being cut off by the proxy's SIGKILL.
  const giveUp = leaseHolder ? setTimeout(() => front?.renders.abortWaits('the service is stopping'), Math.min(config.SHUTDOWN_GRACE_MS, 20_000)) : undefined;
  if (front) await closeFront(front.api);
  clearTimeout(giveUp);
  await leaseHolder?.stop();
  // The GPU entry: no new prompts from here on (the gate closes with the leases).
  await leaseServer?.close();
  workers?.stopProbing();
  // Attempts waiting in this worker for a ComfyUI (the lookahead) go back to the shared queue at once.
  workers?.handBackWaiting('the worker is stopping');
  if (workers) {
    await workers.set.shutdown();
    await workers.done.catch(() => undefined);
    // The event sockets the drained workers kept open for their next prompts.
    await Promise.all([...shared.clients.values()].map((c) => c.closeSocketAhead()));
  }
  // Drains the worker thread's running activities, while Temporal still runs.
  await workerThread?.stop();
  if (workerThread) setPeerMetricsSource(undefined);
  if (leaseServer) await freeVram(gpuBackends(shared.backends, config.GPU_BACKENDS), shared.clients, logger);
  await workers?.metricsServer?.close();
  await temporal.connection.close().catch(() => undefined);
  await temporal.devServer?.stop();
  // Last: the spans of the drained renders are in the buffer.
  await telemetry.tracing?.shutdown().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'tracing: flushing spans failed'));
}

/**
 * Stop taking requests and wait for the ones in flight (clients waiting on renders get their images).
 * `server.close()` only drops connections idle at that moment: a waiting client's keep-alive connection goes
 * idle once it has its answer and would then hold the drain for the whole keep-alive timeout (72 s).
 */
async function closeFront(api: FastifyInstance): Promise<void> {
  const closing = api.close();
  const sweep = setInterval(() => api.server.closeIdleConnections(), 200);
  try {
    await closing;
  } finally {
    clearInterval(sweep);
  }
}

async function withConnection<T>(address: string, fn: (c: Connection) => Promise<T>): Promise<T> {
  const c = await Connection.connect({ address });
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}
