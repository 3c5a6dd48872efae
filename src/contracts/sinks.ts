/**
 * What workflow code reports to the worker that runs it, outside history (Temporal sinks, never called on
 * replay): the outcome interceptor (src/workflows/outcome-interceptor.ts) calls these, the worker's metrics
 * (src/metrics/render-sinks.ts) implement them.
 */
import type { Sinks } from '@temporalio/workflow';

export interface RenderOutcomeSinks extends Sinks {
  renderOutcome: {
    /** `outcome`: completed, partial (interrupt, skip) or blank (src/contracts/outcome.ts). */
    completed(model: string, outcome: string): void;
    failed(model: string, reason: string): void;
  };
}
