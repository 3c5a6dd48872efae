import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Backend } from '../render/types.ts';
import type { RenderActivities } from './types.ts';
import { clientFor, type ActivityDeps } from './index.ts';

const { temporal } = proto;

interface QueueLoad {
  /** Prompts waiting in Temporal for this backend's single slot (the real queue: ComfyUI's stays at one). */
  backlog: number;
  /** Whether any worker polls the backend's queue: a render sent to an unserved queue would wait forever. */
  served: boolean;
}

/**
 * Least busy reachable ComfyUI. Waiting happens in Temporal's per-backend task queues, not in ComfyUI, so
 * the load is that queue's backlog plus what ComfyUI itself holds; ties are broken at random so equal
 * backends share work. Backends nobody serves, that are unreachable, or marked unhealthy (a wedged ComfyUI,
 * see worker/backend-health.ts) are avoided while another is usable; with no healthy one left the render
 * still goes to an unhealthy one, whose runPrompt fails with a clear reason (or proceeds, if ComfyUI was
 * restarted meanwhile). With one backend this is a reachability check, which turns "ComfyUI is down" into a
 * visible retry in history.
 */
export function createChooseBackend(deps: ActivityDeps): RenderActivities['chooseBackend'] {
  return async () => {
    const loads = await Promise.all(
      deps.backends.map(async (backend) => {
        try {
          const client = clientFor(deps, backend);
          const [q, queue] = await Promise.all([client.getQueue({ timeoutMs: 5_000 }), queueLoad(backend)]);
          const unhealthy = (await deps.health.recheck(backend, client)) !== undefined;
          return { backend, load: q.runningIds.length + q.pendingIds.length + queue.backlog, unhealthy, served: queue.served, tie: Math.random() };
        } catch (err) {
          deps.logger.warn({ backend: backend.id, err: (err as Error).message }, 'backend unreachable');
          return undefined;
        }
      }),
    );
    const reachable = loads.filter((l): l is NonNullable<typeof l> => l !== undefined);
    if (reachable.length === 0) {
      throw ApplicationFailure.retryable(`no ComfyUI backend reachable (${deps.backends.map((b) => b.url).join(', ')})`, 'ComfyUnavailable');
    }
    reachable.sort(
      (a, b) => Number(!a.served) - Number(!b.served) || Number(a.unhealthy) - Number(b.unhealthy) || a.load - b.load || a.tie - b.tie,
    );
    const best = reachable[0]!;
    if (!best.served) {
      // Sorted served-first: no worker polls any reachable backend's GPU queue, so a prompt sent there would
      // wait forever. Retried (a worker may be starting), then the render fails saying why.
      throw ApplicationFailure.retryable(
        `no worker serves the GPU queue of any reachable backend (${reachable.map((l) => l.backend.taskQueue).join(', ')}): is a worker running with these backends in GPU_BACKENDS?`,
        'NoWorker',
      );
    }
    return best.backend;
  };
}

async function queueLoad(backend: Backend): Promise<QueueLoad> {
  try {
    const res = await Context.current().client.workflowService.describeTaskQueue({
      namespace: Context.current().info.workflowNamespace,
      taskQueue: { name: backend.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      reportStats: true,
    });
    return { backlog: Number(res.stats?.approximateBacklogCount ?? 0), served: (res.pollers?.length ?? 0) > 0 };
  } catch {
    // Older servers without stats, or a transient error: fall back to ComfyUI's own queue alone.
    return { backlog: 0, served: true };
  }
}
