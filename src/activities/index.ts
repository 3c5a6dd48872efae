/**
 * Activity implementations: all I/O of a render lives here (ComfyUI, blob store). Each is idempotent, so
 * Temporal may retry any of them: uploads are content-addressed, prompt ids are deterministic, and a
 * retried `runPrompt` re-attaches to the prompt an earlier attempt already submitted.
 */
import type { BlobStore } from '../blobs/store.ts';
import type { ComfyClient } from '../comfyui/client.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import type { Backend } from '../render/types.ts';
import type { BackendHealth } from '../backends/health.ts';
import type { GpuPool } from '../backends/gpu-pool.ts';
import type { Client } from '@temporalio/client';
import type { RenderActivities, RetentionActivities } from './types.ts';
import { createRunPrompt } from './run-prompt.ts';
import { createStopPrompts } from './stop-prompts.ts';
import { createPruneExpired } from './prune-expired.ts';

export interface ActivityDeps {
  config: Config;
  blobs: BlobStore;
  backends: Backend[];
  clients: Map<string, ComfyClient>;
  logger: Logger;
  /** Unhealthy-backend marks: written by runPrompt's escalation, read by the GPU pool and /health. */
  health: BackendHealth;
  /** For the retention activity, which reads and deletes render executions (absent: it cannot run here). */
  temporal?: { client: Client; namespace: string };
}

export function clientFor(deps: Pick<ActivityDeps, 'clients'>, backend: Backend): ComfyClient {
  const client = deps.clients.get(backend.id);
  if (!client) throw new Error(`no ComfyUI client for backend ${backend.id}: is this worker configured with it?`);
  return client;
}

/** `pool`: the ComfyUIs this process runs prompts on (see backends/gpu-pool.ts); none for an `api` process. */
export function createActivities(deps: ActivityDeps, pool: GpuPool): RenderActivities & RetentionActivities {
  return {
    runPrompt: createRunPrompt(deps, pool),
    stopPrompts: createStopPrompts(deps),
    pruneExpired: createPruneExpired(deps),
  };
}
