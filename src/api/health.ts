/**
 * `/health`: 200 only when every dependency of a render answers — each ComfyUI (`/system_stats`), Temporal,
 * a worker polling the render queue and, in `start` mode, the front's own worker thread — else 503 with the
 * failing checks, so orchestrators and the model-swapping proxy do not route to a half-started service.
 */
import type { Client } from '@temporalio/client';
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';

const { temporal } = proto;
import type { Backend } from '../contracts/render.ts';

export interface HealthCheck {
  name: string;
  ok: boolean;
  detail?: string;
}

export interface HealthDeps {
  temporal: Client;
  namespace: string;
  taskQueue: string;
  backends: Backend[];
  /** Probe one ComfyUI: resolves when `/system_stats` answers. */
  probeComfy(backend: Backend): Promise<unknown>;
  /**
   * Backends marked unhealthy by the worker (a stalled prompt that survived interrupt and /free): marker
   * files in DATA_DIR, so an `api`-only front sees them too (src/backends/health.ts).
   */
  unhealthy?: () => Map<string, string>;
  /** `start` mode: the state of the front's worker thread (running, starting, restarting after a crash). */
  workerThread?: () => { ok: boolean; detail: string };
}

const timeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms).unref())]);

export async function checkHealth(deps: HealthDeps): Promise<{ ok: boolean; checks: HealthCheck[] }> {
  const checks = await Promise.all([
    ...deps.backends.map(async (b): Promise<HealthCheck> => {
      const name = `comfyui:${b.id}`;
      const marked = deps.unhealthy?.().get(b.id);
      if (marked) return { name, ok: false, detail: marked };
      try {
        await timeout(deps.probeComfy(b), 3_000);
        return { name, ok: true };
      } catch (err) {
        // /health is open (no token): name the backend by id, never by its internal URL.
        return { name, ok: false, detail: (err as Error).message.split(b.url).join(b.id) };
      }
    }),
    (async (): Promise<HealthCheck> => {
      try {
        await timeout(deps.temporal.workflowService.getSystemInfo({}), 3_000);
        return { name: 'temporal', ok: true };
      } catch (err) {
        return { name: 'temporal', ok: false, detail: (err as Error).message };
      }
    })(),
    (async (): Promise<HealthCheck> => {
      try {
        const res = await timeout(
          deps.temporal.workflowService.describeTaskQueue({
            namespace: deps.namespace,
            taskQueue: { name: deps.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          }),
          3_000,
        );
        const pollers = res.pollers?.length ?? 0;
        return { name: 'worker', ok: pollers > 0, detail: `${pollers} poller(s) on ${deps.taskQueue}` };
      } catch (err) {
        return { name: 'worker', ok: false, detail: (err as Error).message };
      }
    })(),
    ...(deps.workerThread ? [Promise.resolve(workerThreadCheck(deps.workerThread()))] : []),
  ]);
  return { ok: checks.every((c) => c.ok), checks };
}

/** Temporal lists a dead worker's pollers for a while; the front knows its own worker thread at once. */
function workerThreadCheck(state: { ok: boolean; detail: string }): HealthCheck {
  return { name: 'worker-thread', ok: state.ok, detail: state.detail };
}
