/**
 * The worker side of src/workflows/outcome-interceptor.ts: render outcomes into this process's counters.
 * Duration is the workflow run's own, from its start to now.
 */
import type { InjectedSinks } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { RenderOutcomeSinks } from '../contracts/sinks.ts';
import { renderDuration, renderOutcomes, rendersCompleted, rendersFailed } from './metrics.ts';

const seconds = (info: WorkflowInfo): number => Math.max(0, (Date.now() - info.runStartTime.getTime()) / 1000);

export function renderOutcomeSinks(): InjectedSinks<RenderOutcomeSinks> {
  return {
    renderOutcome: {
      completed: {
        fn(info, model, outcome) {
          rendersCompleted.inc({ model });
          renderOutcomes.inc({ model, outcome });
          renderDuration.observe({ model, outcome: 'completed' }, seconds(info));
        },
      },
      failed: {
        fn(info, model, reason) {
          rendersFailed.inc({ model, reason });
          renderOutcomes.inc({ model, outcome: reason === 'Cancelled' ? 'cancelled' : 'failed' });
          renderDuration.observe({ model, outcome: 'failed' }, seconds(info));
        },
      },
    },
  };
}

/**
 * The interceptor module, for the workflow bundle and the worker: the TypeScript source under tsx, the
 * compiled file when this module runs from dist/ (scripts/build.sh).
 */
const ownExt = import.meta.url.endsWith('.js') ? '.js' : '.ts';
export const OUTCOME_INTERCEPTOR_MODULE = new URL(`../workflows/outcome-interceptor${ownExt}`, import.meta.url).pathname;
