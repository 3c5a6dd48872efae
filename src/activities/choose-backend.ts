import { ApplicationFailure } from '@temporalio/common';
import type { RenderActivities } from './types.ts';
import { clientFor, type ActivityDeps } from './index.ts';

/**
 * Least busy reachable ComfyUI. With one backend this is just a reachability check, which turns "ComfyUI
 * is down" into a visible retry in history instead of a prompt stuck on a queue nobody serves.
 */
export function createChooseBackend(deps: ActivityDeps): RenderActivities['chooseBackend'] {
  return async () => {
    const loads = await Promise.all(
      deps.backends.map(async (backend) => {
        try {
          const q = await clientFor(deps, backend).getQueue({ timeoutMs: 5_000 });
          return { backend, load: q.runningIds.length + q.pendingIds.length };
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
    reachable.sort((a, b) => a.load - b.load);
    return reachable[0]!.backend;
  };
}
