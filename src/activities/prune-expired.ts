/**
 * `pruneExpired`: the retention schedule's prune (src/workflows/retention.ts). The same prune as
 * `renders prune --older-than RENDER_RETENTION_DAYS` (src/retention/prune.ts), over this worker's blob store
 * (fs or S3) and, when set, its COMFYUI_INPUT_DIR. It heartbeats per render and blob batch, so a worker
 * that dies mid-prune is noticed in minutes and the next attempt starts over (a prune is idempotent).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { pruneRenders } from '../retention/prune.ts';
import type { ActivityDeps } from './deps.ts';
import type { RetentionRunResult } from '../contracts/activities.ts';

/** Render ids a run's result lists (the count is always whole): a first prune of a big store must not exceed
 * Temporal's payload limit (2 MB) with tens of thousands of ids. */
const LISTED_IDS = 100;

export function createPruneExpired(deps: Pick<ActivityDeps, 'config' | 'blobs' | 'temporal' | 'logger'>): () => Promise<RetentionRunResult> {
  return async () => {
    if (!deps.temporal) throw ApplicationFailure.nonRetryable('this worker has no Temporal client for pruning', 'RetentionUnavailable');
    const ctx = Context.current();
    const result = await pruneRenders({
      client: deps.temporal.client,
      namespace: deps.temporal.namespace,
      blobs: deps.blobs,
      olderThanMs: deps.config.RENDER_RETENTION_DAYS * 86_400_000,
      comfyInputDir: deps.config.COMFYUI_INPUT_DIR,
      progress: () => ctx.heartbeat(),
    });
    deps.logger.info(
      {
        cutoff: result.cutoff,
        rendersDeleted: result.rendersDeleted.length,
        rendersKept: result.rendersKept,
        blobsDeleted: result.blobsDeleted,
        bytesFreed: result.bytesFreed,
      },
      'retention: pruned',
    );
    return {
      ...result,
      rendersDeleted: result.rendersDeleted.slice(0, LISTED_IDS),
      rendersDeletedCount: result.rendersDeleted.length,
    };
  };
}
