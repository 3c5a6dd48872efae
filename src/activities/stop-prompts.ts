import { Context } from '@temporalio/activity';
import { attemptPromptId } from './prompt-ids.ts';
import { toFailure } from './failures.ts';
import type { RenderActivities } from './types.ts';
import { clientFor, type ActivityDeps } from './index.ts';

/**
 * Prompt ids are derived from (workflow, run, item, attempt), so the ids every attempt may have submitted
 * are known without having been recorded: cancel each. Idempotent, so safe to retry.
 */
export function createStopPrompts(deps: ActivityDeps): RenderActivities['stopPrompts'] {
  return async ({ backend, item, attempts }) => {
    const exec = Context.current().info.workflowExecution;
    if (!exec) throw new Error('stopPrompts runs only as a workflow activity');
    const client = clientFor(deps, backend);
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const promptId = attemptPromptId(exec, item, attempt);
      try {
        const res = await client.cancelJob(promptId, { timeoutMs: 10_000 });
        deps.logger.info({ promptId, item, attempt, res }, 'stopped prompt left by an ended render');
      } catch (err) {
        throw toFailure(err);
      }
    }
  };
}
