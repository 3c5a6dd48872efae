import { Context } from '@temporalio/activity';
import type { Backend } from '../contracts/render.ts';
import { attemptPromptId } from './prompt-ids.ts';
import { toFailure } from './failures.ts';
import type { RenderActivities } from '../contracts/activities.ts';
import { clientFor, type ActivityDeps } from './deps.ts';

/**
 * Prompt ids are derived from (workflow, run, item, attempt), so the ids every attempt may have submitted
 * are known without having been recorded: cancel each where it may run. Idempotent, so safe to retry.
 * The workflow names the backend of each attempt, where known ('' = unknown: every backend is asked, and one
 * that does not answer runs nothing of ours that we could stop).
 */
export function createStopPrompts(deps: ActivityDeps): RenderActivities['stopPrompts'] {
  return async ({ attemptBackends, item, attempts }) => {
    const exec = Context.current().info.workflowExecution;
    if (!exec) throw new Error('stopPrompts runs only as a workflow activity');
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const promptId = attemptPromptId(exec, item, attempt);
      const known = deps.backends.filter((b) => b.id === attemptBackends[attempt - 1]);
      const where: Backend[] = known.length > 0 ? known : deps.backends;
      for (const b of where) {
        try {
          const res = await clientFor(deps, b).cancelJob(promptId, { timeoutMs: 10_000 });
          deps.logger.info({ promptId, item, attempt, backend: b.id, res }, 'stopped prompt left by an ended render');
        } catch (err) {
          // The named backend must answer (retried); a guess among all of them may be down.
          if (known.length > 0) throw toFailure(err);
        }
      }
    }
  };
}
