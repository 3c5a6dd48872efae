/**
 * Render outcomes counted where they happen: a workflow inbound interceptor reports each workflow's end to a
 * sink, and the sink (src/metrics/render-sinks.ts) increments the counters in the worker. Sinks are not
 * called while a workflow replays, so an outcome is counted once, whether or not a front waited for it, and
 * a render that completes after a front restart is counted all the same. No workflow code changes: the
 * interceptor wraps `execute`. Deterministic: it only reads its input and the error.
 */
import { TemporalFailure, proxySinks, type WorkflowInterceptorsFactory, workflowInfo } from '@temporalio/workflow';
import { outcomeOf } from '../contracts/outcome.ts';
import type { RenderResult } from '../contracts/render.ts';
import type { RenderOutcomeSinks } from '../contracts/sinks.ts';
import { outcomeReason } from './failure-class.ts';

export { outcomeReason } from './failure-class.ts';

const { renderOutcome } = proxySinks<RenderOutcomeSinks>();

const modelOf = (arg: unknown): string => {
  const m = arg && typeof arg === 'object' ? (arg as { model?: unknown }).model : undefined;
  return typeof m === 'string' ? m : 'unknown';
};

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        // Render outcomes only: the retention workflow (src/workflows/retention.ts) is no render.
        if (workflowInfo().workflowType !== 'render') return next(input);
        const model = modelOf(input.args[0]);
        try {
          const result = await next(input);
          renderOutcome.completed(model, outcomeOf(result as RenderResult).outcome);
          return result;
        } catch (err) {
          // Only Temporal failures end the workflow; any other error fails the workflow task, which is retried.
          if (err instanceof TemporalFailure) renderOutcome.failed(model, outcomeReason(err));
          throw err;
        }
      },
    },
  ],
});
