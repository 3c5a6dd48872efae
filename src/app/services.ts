/**
 * Composition root: builds the pieces each process mode needs from the validated config.
 * `start` = embedded Temporal (unless TEMPORAL_ADDRESS) + front + a worker thread (`worker` mode in a
 * worker_thread of the same process, app/worker-thread.ts); `worker` and `api` run one part.
 */
import type { FastifyInstance } from 'fastify';
import { TEMPORAL_UI_PATH } from '../api/temporal-ui-proxy.ts';
import { blobStoreFromConfig } from '../blobs/from-config.ts';
import { ComfyClient } from '../comfyui/client.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import { checkModelConfig } from './model-config.ts';
import { getProfile } from '../models/registry.ts';
import type { Backend } from '../render/types.ts';
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
import { ensureNamespaceRetention } from '../temporal/retention.ts';
import { ensureRetentionSchedule } from '../temporal/retention-schedule.ts';
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
}

export function comfyClients(backends: Backend[], logger: Logger): Map<string, ComfyClient> {
  return new Map(backends.map((b) => [b.id, new ComfyClient({ baseUrl: b.url, logger: logger.child({ backend: b.id }) })]));
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

// eslint-disable-next-line max-lines-per-function -- the process wiring in start order, with close() stopping the same locals in the reverse order: split, the two orders could drift apart
export async function runServices(mode: Mode, config: Config, logger: Logger, opts: ServiceOptions = {}): Promise<Running> {
  // Before any client or worker exists: they pick the global tracer provider up when they make spans.
  const tracing = await startTracing(config, { mode, ...(opts.spanExporter ? { exporter: opts.spanExporter } : {}) });
  if (tracing) logger.info({ mode }, 'OpenTelemetry tracing on');
  // The Temporal workers and the HTTP front each load only where they run (RSS: the SDK's worker runtime is
  // tens of MB a `start` front does not need, and Fastify with every route the same in its worker thread).
  const { clientTracingInterceptors, workerTracing } = tracing ? await import('../tracing/temporal.ts') : {};
  checkModelConfig(config);

  // Mode `gpu` answers the proxy's readiness check (503 until the worker polls) from the start.
  const leaseServer = mode === 'gpu' ? await startGpuEntryServer(config, logger) : undefined;
  let devServer: DevServer | undefined;
  let address = config.TEMPORAL_ADDRESS;
  if (!address) {
    if (mode !== 'start') address = '127.0.0.1:7233';
    else {
      devServer = await startDevServer({
        binary: findTemporalBinary(config.TEMPORAL_CLI_PATH),
        dbFile: config.temporalDbFile,
        port: config.TEMPORAL_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        ui: config.TEMPORAL_UI,
        uiPublicPath: TEMPORAL_UI_PATH,
        namespace: config.TEMPORAL_NAMESPACE,
        logger,
      });
      address = devServer.address;
      await withConnection(address, (c) => ensureNamespaceRetention(c, config.TEMPORAL_NAMESPACE, config.RENDER_RETENTION_DAYS, logger));
    }
  }

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
  const { client, connection } = await connectClient(
    address,
    config.TEMPORAL_NAMESPACE,
    clientTracingInterceptors ? { workflowInterceptors: clientTracingInterceptors() } : {},
  );
  await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE, logger);

  // The worker thread starts now; the front is built meanwhile and listens once the worker is ready.
  let workerThread: WorkerThread | undefined;
  if (mode === 'start' && !opts.workersInProcess) {
    const temporalAddress = address;
    workerThread = startWorkerThread({
      env: { ...(opts.workerEnv ?? process.env), TEMPORAL_ADDRESS: temporalAddress },
      logger,
      stopTimeoutMs: config.SHUTDOWN_GRACE_MS + 30_000,
      pingTimeoutMs: config.WORKER_THREAD_PING_TIMEOUT_MS,
    });
    setPeerMetricsSource(() => workerThread!.metrics());
  }

  let workers: WorkerSet | undefined;
  let workersDone: Promise<void> = new Promise(() => undefined);
  let stopProbing: (() => void) | undefined;
  let handBackWaiting: ((why: string) => void) | undefined;
  let metricsServer: MetricsServer | undefined;
  if ((mode === 'start' && opts.workersInProcess) || mode === 'worker' || mode === 'gpu') {
    const [{ Runtime }, { createActivities }, { GpuPool }, { bundleWorkflowsInChild, createWorkers, workflowInterceptorModules }] = await Promise.all([
      import('@temporalio/worker'),
      import('../activities/index.ts'),
      import('../backends/gpu-pool.ts'),
      import('../worker/worker.ts'),
    ]);
    // We install our own signal handling (graceful drain, second signal exits); the SDK must not race it.
    Runtime.install({ shutdownSignals: [], logger: undefined });
    const served = gpuBackends(backends, config.GPU_BACKENDS);
    // In the GPU entry, prompts are taken only while a front holds the lease through the proxy.
    const pool = new GpuPool(served, leaseServer ? gatedHealth(health, leaseServer.gate) : health, {
      lookahead: config.GPU_DISPATCH_LOOKAHEAD,
      maxPassOverMs: config.GPU_MAX_PASS_OVER_MS,
      // Without the lease no prompt starts, but the lease comes back: attempts waiting here keep their place.
      ...(leaseServer ? { paused: () => !leaseServer.gate.held() } : {}),
    });
    handBackWaiting = (why) => pool.handBack(why);
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
        temporal: { client, namespace: config.TEMPORAL_NAMESPACE },
        // The proxy gives the GPU on once this entry exits: no prompt may outlive it (activities/run-prompt.ts).
        ...(mode === 'gpu' ? { stopPromptOnShutdown: true } : {}),
      },
      pool,
    );
    const traced = tracing && workerTracing ? workerTracing(tracing) : undefined;
    workers = await createWorkers({
      address,
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
      ...(opts.supervised ? { sandboxOnThisThread: true } : {}),
      logger,
      shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
    });
    workersDone = workers.run();
    // Every worker ensures it; all but the first find it there. A failure here must not stop rendering.
    await ensureRetentionSchedule(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, everyMs: config.RENDER_PRUNE_INTERVAL, logger }).catch((err: unknown) =>
      logger.error({ err }, 'could not create the retention schedule: renders and blobs will not be pruned automatically'),
    );
    // A marked backend recovers without waiting for a render to try it: probe it while it is marked.
    stopProbing = health.startProbing(backends, (b) => clients.get(b.id), Math.max(1_000, Math.min(10_000, config.POLL_INTERVAL_MS * 5)));
    leaseServer?.setReady(true);
    if (mode !== 'start' && !opts.supervised && config.METRICS_PORT !== undefined) {
      metricsServer = await startMetricsServer({ host: config.METRICS_HOST, port: config.METRICS_PORT, token: config.API_TOKEN, logger });
    }
  }

  let api: FastifyInstance | undefined;
  let apiUrl: string | undefined;
  let uiUrl: string | undefined;
  let uiWarning: string | undefined;
  const leaseHolder =
    mode === 'start' || mode === 'api'
      ? startLeaseHolder(
          config,
          client,
          logger,
          anyBackendUsable(backends, clients, () => health.unhealthy(backends)),
        )
      : undefined;
  let proxyWatch: { stop(): void } | undefined;
  let renders: RenderServiceT | undefined;
  if (mode === 'start' || mode === 'api') {
    const [{ buildServer }, { OptionsStore }, { ComfyCatalog }, { RenderService }] = await Promise.all([
      import('../api/server.ts'),
      import('../api/options-store.ts'),
      import('../api/comfy-catalog.ts'),
      import('../renders/render-service.ts'),
    ]);
    const defaultProfile = getProfile(config.DEFAULT_MODEL);
    // Renders start eagerly on the workers' connection: theirs in this thread, or the worker thread's through
    // its port (not with tracing on: the start's span context could not cross the port).
    const eager = workers
      ? clientStarter(
          new Client({
            connection: workers.connection,
            namespace: config.TEMPORAL_NAMESPACE,
            ...(clientTracingInterceptors ? { interceptors: { workflow: clientTracingInterceptors() } } : {}),
          }),
        )
      : workerThread && !tracing
        ? workerThread.startRender
        : undefined;
    renders = new RenderService(client, config.TEMPORAL_TASK_QUEUE, eager);
    api = await buildServer({
      config,
      logger,
      blobs,
      // Workers in this process (tests): renders start eagerly on the worker's connection (RenderService).
      // Every front builds the graphs itself (renders/submit.ts), with the configuration it shares with its workers.
      renders,
      tracing: tracing !== undefined,
      options: new OptionsStore(path.join(config.dataDir, 'options.json'), {
        sd_model_checkpoint: defaultProfile?.title ?? config.DEFAULT_MODEL,
      }),
      health: {
        temporal: client,
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
      ...(devServer?.uiUrl ? { temporalUi: { upstream: devServer.uiUrl } } : {}),
      ...(leaseHolder ? { gpuLease: leaseHolder } : {}),
    });
    if (workerThread) {
      try {
        await workerThread.ready;
      } catch (err) {
        await api.close();
        await connection.close().catch(() => undefined);
        await devServer?.stop();
        throw err;
      }
    }
    apiUrl = await api.listen({ host: config.HOST, port: config.PORT });
    if (leaseHolder && config.GPU_LEASE_URL) {
      // The proxy stopping (llama-swap closes its listener, waits 30 s for the requests in flight, then SIGKILLs):
      // release the lease and answer every waiting client now, so its wait ends early and it stops us with SIGTERM.
      const waiting = renders;
      proxyWatch = watchProxy(
        new URL(config.GPU_LEASE_URL).host,
        () => {
          void leaseHolder.stop();
          waiting.abortWaits('the proxy in front of this service is stopping');
        },
        logger,
      );
    }
    if (devServer?.uiUrl) {
      uiUrl = `${apiUrl}${TEMPORAL_UI_PATH}/`;
      uiWarning = temporalUiWarning(config, devServer.uiUrl);
      logger.warn({ uiUrl, uiProcess: devServer.uiUrl }, uiWarning);
    }
  }

  return {
    temporalAddress: address,
    ...(workers && opts.supervised ? { startEagerly: startOnConnection(workers.connection, config.TEMPORAL_NAMESPACE) } : {}),
    uiUrl,
    uiWarning,
    apiUrl,
    done: workersDone,
    stop: async () => {
      // Order matters: stop taking requests, drain workers (in-flight activities get the grace time and
      // are retried elsewhere if cut), then stop the embedded server.
      proxyWatch?.stop();
      // Behind a proxy that stops us, the GPU entry is being stopped too: a client still waiting after the grace
      // gets a retryable 503 rather than being cut off by the proxy's SIGKILL.
      const giveUp = leaseHolder ? setTimeout(() => renders?.abortWaits('the service is stopping'), Math.min(config.SHUTDOWN_GRACE_MS, 20_000)) : undefined;
      if (api) await closeFront(api);
      clearTimeout(giveUp);
      await leaseHolder?.stop();
      // The GPU entry: no new prompts from here on (the gate closes with the leases).
      await leaseServer?.close();
      stopProbing?.();
      // Attempts waiting in this worker for a ComfyUI (the lookahead) go back to the shared queue at once.
      handBackWaiting?.('the worker is stopping');
      if (workers) {
        await workers.shutdown();
        await workersDone.catch(() => undefined);
      }
      // Drains the worker thread's running activities, while Temporal still runs.
      await workerThread?.stop();
      if (workerThread) setPeerMetricsSource(undefined);
      if (leaseServer) await freeVram(gpuBackends(backends, config.GPU_BACKENDS), clients, logger);
      await metricsServer?.close();
      await connection.close().catch(() => undefined);
      await devServer?.stop();
      // Last: the spans of the drained renders are in the buffer.
      await tracing?.shutdown().catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'tracing: flushing spans failed'));
    },
  };
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
