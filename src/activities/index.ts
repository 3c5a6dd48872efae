/**
 * Activity implementations: all I/O of a render lives here (ComfyUI, blob store). Each is idempotent, so
 * Temporal may retry any of them: uploads are content-addressed, prompt ids are deterministic, and a
 * retried `runPrompt` re-attaches to the prompt an earlier attempt already submitted.
 */
import type { GpuPool } from '../backends/gpu-pool.ts';
import type { RenderActivities, RetentionActivities, WebhookActivities } from '../contracts/activities.ts';
import type { ActivityDeps } from './deps.ts';
import { createRunPrompt } from './run-prompt.ts';
import { createStopPrompts } from './stop-prompts.ts';
import { createPruneExpired } from './prune-expired.ts';
import { createDeliverWebhook } from './deliver-webhook.ts';

export type { ActivityDeps } from './deps.ts';

/** `pool`: the ComfyUIs this process runs prompts on (see backends/gpu-pool.ts); none for an `api` process. */
export function createActivities(deps: ActivityDeps, pool: GpuPool): RenderActivities & RetentionActivities & WebhookActivities {
  return {
    runPrompt: createRunPrompt(deps, pool),
    stopPrompts: createStopPrompts(deps),
    pruneExpired: createPruneExpired(deps),
    deliverWebhook: createDeliverWebhook(deps),
  };
}
