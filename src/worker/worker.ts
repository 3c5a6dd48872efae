/**
 * Temporal workers of one process:
 * - the general queue: workflows and the small I/O activities (stopPrompts, retention);
 * - the shared GPU queue (`<taskQueue>-gpu`): prompt attempts, with one activity slot per healthy ComfyUI
 *   of this process (backends/gpu-pool.ts), so a free GPU anywhere takes the next waiting prompt;
 * - the webhook queue (`<taskQueue>-webhooks`), beside the general one: webhook tries, with a few slots of
 *   their own, so a dead receiver holds neither a GPU slot nor the slots that stop prompts.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from '../log.ts';
import type { Backend } from '../contracts/render.ts';
import type { RenderActivities, WebhookActivities } from '../contracts/activities.ts';
import { gpuTaskQueue, webhookTaskQueue } from '../contracts/task-queues.ts';
import type { GpuPool } from '../backends/gpu-pool.ts';
import { OUTCOME_INTERCEPTOR_MODULE, renderOutcomeSinks } from '../metrics/render-sinks.ts';
import type { WorkerTracing } from '../tracing/temporal.ts';
import { stopWorkflowStackTraces } from './workflow-stack-traces.ts';
import { watchRunClosures } from './run-closures.ts';
import type { RunClosureListener } from '../contracts/closed-run.ts';
import { childNodeArgs } from './child-node-args.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Run from dist/ (plain node on the compiled JavaScript, scripts/build.sh) rather than TypeScript via tsx. */
const compiled = import.meta.url.endsWith('.js');
const ownExt = compiled ? '.js' : '.ts';
export const WORKFLOWS_PATH = path.join(here, '..', 'workflows', `index${ownExt}`);
const BUNDLER = path.join(here, `bundle-workflows${ownExt}`);
/** Built by scripts/build.sh from the same compiled workflows as this dist/, so it is never stale against it. */
export const PREBUILT_BUNDLE = path.join(here, '..', 'workflow-bundle.js');
/** Test-only: the path of a bundle of these sources with the default interceptors, built once per test run. */
export const TEST_BUNDLE_ENV = 'COMFY_DURABLE_TEST_WORKFLOW_BUNDLE';

/** The workflow interceptor modules of a worker: render outcomes always, the tracing ones when tracing is on. */
export function workflowInterceptorModules(tracing?: WorkerTracing): string[] {
  return [OUTCOME_INTERCEPTOR_MODULE, ...(tracing?.workflowModules ?? [])];
}

/**
 * The workflow bundle's path: dist/'s prebuilt one when running compiled, else built now in a child process
 * (same node flags, so the TypeScript loader is there too). Under tsx it is always rebuilt at start: a stale
 * bundle would run old workflow code.
 */
export async function bundleWorkflowsInChild(outDir: string, interceptorModules: string[] = workflowInterceptorModules()): Promise<string> {
  // The prebuilt bundle carries the default interceptors only; with tracing on, bundle now.
  const defaults = workflowInterceptorModules();
  const isDefault = interceptorModules.length === defaults.length && interceptorModules.every((m, i) => m === defaults[i]);
  if (compiled && isDefault && existsSync(PREBUILT_BUNDLE)) return PREBUILT_BUNDLE;
  // Test runs only: the suite bundles these same sources once (test/support/workflow-bundle.ts), so the
  // dozens of services it starts do not each run webpack for the same bytes.
  const shared = process.env[TEST_BUNDLE_ENV];
  if (isDefault && shared && existsSync(shared)) return shared;
  removeStaleBundles(outDir);
  const out = path.join(outDir, `workflow-bundle-${process.pid}.js`);
  await promisify(execFile)(process.execPath, [...childNodeArgs(), BUNDLER, WORKFLOWS_PATH, out, ...interceptorModules], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return out;
}

export interface WorkerSetOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  backends: Backend[];
  /** The ComfyUIs of `backends`, handed out to prompt attempts. */
  pool: GpuPool;
  activities: RenderActivities & Partial<WebhookActivities>;
  /** Webhook tries this process runs at once (WEBHOOK_MAX_CONCURRENT). */
  webhookSlots?: number;
  logger: Logger;
  shutdownGraceMs?: number;
  /** A prebuilt bundle (bundleWorkflowsInChild, with workflowInterceptorModules(tracing)); without it the worker bundles in-process. */
  workflowBundlePath?: string;
  /** Tracing interceptors and the sink of workflow spans, when tracing is on. */
  tracing?: WorkerTracing;
  /**
   * false: no general worker (no workflows, no I/O activities), only the GPU queues. The GPU entry of a
   * model-swapping proxy: its front runs the workflows, and it starts faster without a workflow bundle.
   */
  general?: boolean;
  /**
   * Run the workflow sandbox on this thread's own event loop instead of in a thread of the SDK's: for
   * `start`'s worker thread, which is already a thread of its own (app/worker-thread.ts). Saves a V8 isolate
   * (bench/README.md, issue 25) and a message hop per workflow task. The SDK's switch for it is `debugMode`;
   * its deadlock detector stays on (isolateExecutionTimeout, 5 s as by default). The SDK's stack-trace promise
   * hook would then run for every promise of the thread's activities too: it is stopped unless
   * `workflowStackTraces` (workflow-stack-traces.ts).
   */
  sandboxOnThisThread?: boolean;
  /** Keep collecting workflow stack traces (the `__stack_trace` query) when the sandbox is on this thread. */
  workflowStackTraces?: boolean;
}

export interface WorkerSet {
  run(): Promise<void>;
  shutdown(): Promise<void>;
  connection: NativeConnection;
  /**
   * Tells `listener` of each workflow run the workflow worker completes: when the completion is sent, and once the
   * server accepted it as closed (run-closures.ts). For a front in this process, which then answers without the
   * history long poll. Watching starts with the first listener; false when there is no workflow worker or the
   * SDK's shape was not found.
   */
  onRunClosed: (listener: RunClosureListener) => boolean;
}

export async function createWorkers(opts: WorkerSetOptions): Promise<WorkerSet> {
  const connection = await NativeConnection.connect({ address: opts.address });
  const { runPrompt, deliverWebhook, ...ioActivities } = opts.activities;
  const shutdownGraceTime = opts.shutdownGraceMs ?? 10_000;
  // Every worker runs activities: each gets the tracing activity interceptors (RunActivity spans).
  const activityInterceptors = opts.tracing ? { activity: opts.tracing.activity } : {};
  const general =
    opts.general === false
      ? []
      : [
          await Worker.create({
            connection,
            namespace: opts.namespace,
            taskQueue: opts.taskQueue,
            ...(opts.workflowBundlePath ? { workflowBundle: { codePath: opts.workflowBundlePath } } : { workflowsPath: WORKFLOWS_PATH }),
            activities: ioActivities,
            shutdownGraceTime,
            ...(opts.sandboxOnThisThread ? { debugMode: true, isolateExecutionTimeout: '5s' } : {}),
            // Render outcomes are counted here, by the workflow's end, not by whichever front waited (render-sinks.ts).
            sinks: { ...renderOutcomeSinks(), ...opts.tracing?.sinks },
            interceptors: { workflowModules: workflowInterceptorModules(opts.tracing), ...activityInterceptors },
          }),
        ];
  // Cancellation reaches an activity only in a heartbeat response, and heartbeats are throttled to 80% of
  // the heartbeat timeout by default: without this, cancelling a render could take ~24 s to interrupt
  // ComfyUI. One small RPC every 2 s per GPU is nothing.
  const maxHeartbeatThrottleInterval = '2s';
  const fixed = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });
  const shared =
    opts.backends.length === 0
      ? []
      : [
          await Worker.create({
            connection,
            namespace: opts.namespace,
            taskQueue: gpuTaskQueue(opts.taskQueue),
            activities: { runPrompt },
            tuner: {
              activityTaskSlotSupplier: opts.pool.slotSupplier(),
              workflowTaskSlotSupplier: fixed(1),
              localActivityTaskSlotSupplier: fixed(1),
              nexusTaskSlotSupplier: fixed(1),
            },
            maxHeartbeatThrottleInterval,
            shutdownGraceTime,
            interceptors: activityInterceptors,
          }),
        ];
  const webhooks =
    opts.general === false || !deliverWebhook
      ? []
      : [
          await Worker.create({
            connection,
            namespace: opts.namespace,
            taskQueue: webhookTaskQueue(opts.taskQueue),
            activities: { deliverWebhook },
            maxConcurrentActivityTaskExecutions: opts.webhookSlots ?? 8,
            shutdownGraceTime,
            interceptors: activityInterceptors,
          }),
        ];
  const all = [...general, ...shared, ...webhooks];
  if (opts.sandboxOnThisThread && !opts.workflowStackTraces && general.length > 0) {
    // Not found means the SDK changed shape (an upgrade): renders still work, at the hook's cost; say so.
    if (stopWorkflowStackTraces()) opts.logger.debug('workflow stack-trace promise hook stopped');
    else opts.logger.warn("the SDK's workflow stack-trace promise hook was not found to stop: every promise of this thread pays for it");
  }
  opts.logger.info({ taskQueue: opts.taskQueue, gpuTaskQueue: gpuTaskQueue(opts.taskQueue), backends: opts.backends.map((b) => b.id) }, 'workers created');
  return {
    connection,
    onRunClosed: closedRunsOf(general[0]),
    run: async () => {
      await Promise.all(all.map((w) => w.run()));
      await connection.close();
    },
    shutdown: async () => {
      for (const w of all) if (w.getState() === 'RUNNING') w.shutdown();
    },
  };
}

/** WorkerSet.onRunClosed for the workflow worker (if any): its workflow tasks are watched from the first listener on. */
function closedRunsOf(workflowWorker: Worker | undefined): WorkerSet['onRunClosed'] {
  const listeners: RunClosureListener[] = [];
  let watching: boolean | undefined;
  return (listener) => {
    watching ??=
      workflowWorker !== undefined &&
      watchRunClosures(workflowWorker, {
        closing: (run) => tellEach(listeners, (l) => l.closing?.(run)),
        closed: (run) => tellEach(listeners, (l) => l.closed(run)),
      });
    if (watching) listeners.push(listener);
    return watching;
  };
}

/** Each listener is told, whatever another one threw. */
function tellEach(listeners: RunClosureListener[], tell: (l: RunClosureListener) => void): void {
  for (const l of listeners) {
    try {
      tell(l);
    } catch {
      // That listener's front answers by the long poll.
    }
  }
}

/** Bundles left by workers that are gone (killed, so they could not clean up). */
function removeStaleBundles(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^workflow-bundle-(\d+)\.js$/.exec(name)?.[1]);
    if (!pid || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch {
      rmSync(path.join(dir, name), { force: true });
    }
  }
}
