import { ApplicationFailure } from '@temporalio/common';
import type { RenderActivities } from './types.ts';
import { clientFor, type ActivityDeps } from './deps.ts';

/**
 * Legacy: only renders started before the shared GPU queue still call this (their workflow binds to one
 * backend up front); current renders bind late, on the worker that takes their prompt (backends/gpu-pool.ts).
 * Picks the least busy reachable ComfyUI by its own queue, healthy ones first, ties at random. The
 * Temporal backlog guess it once used (`describeTaskQueue` statistics, approximate and lagging) is gone.
 */
export function createChooseBackend(deps: ActivityDeps): RenderActivities['chooseBackend'] {
  return async () => {
    const loads = await Promise.all(
      deps.backends.map(async (backend) => {
        try {
          const client = clientFor(deps, backend);
          const q = await client.getQueue({ timeoutMs: 5_000 });
          const unhealthy = (await deps.health.recheck(backend, client)) !== undefined;
          return { backend, load: q.runningIds.length + q.pendingIds.length, unhealthy, tie: Math.random() };
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
    reachable.sort((a, b) => Number(a.unhealthy) - Number(b.unhealthy) || a.load - b.load || a.tie - b.tie);
    return reachable[0]!.backend;
  };
}
