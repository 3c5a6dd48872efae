/**
 * The `retention` workflow: one prune of everything past RENDER_RETENTION_DAYS, started by the Temporal
 * Schedule `comfy-durable-retention` (src/retention/schedule.ts) every RENDER_PRUNE_INTERVAL. Its
 * runs are in Temporal history like renders, but it is not a render: listings, admission, the gallery and
 * the render metrics all select `WorkflowType = 'render'`, and prune deletes only renders, so these runs
 * age out with the namespace retention instead. All the work (reading histories, deleting blobs and
 * executions) is one activity, which heartbeats as it goes; the age and the stores are the worker's config.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { RetentionActivities, RetentionRunResult } from '../contracts/activities.ts';
import type { RetentionWorkflow } from '../contracts/workflows.ts';

const { pruneExpired } = proxyActivities<RetentionActivities>({
  // A big store takes a while to list; a dead worker is noticed by the missing heartbeats instead.
  startToCloseTimeout: '2h',
  heartbeatTimeout: '2m',
  retry: { maximumAttempts: 3, initialInterval: '30s' },
});

export async function retention(): Promise<RetentionRunResult> {
  return pruneExpired();
}

/** Held to the signature the front starts it by (src/contracts/workflows.ts): a change to either fails the type check. */
const _retentionHeldToItsContract: RetentionWorkflow = retention;
