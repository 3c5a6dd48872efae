/**
 * What every activity is built from, and the lookup of a backend's ComfyUI client. Its own module so the
 * activities and the module that assembles them (index.ts) do not import each other.
 */
import type { BlobStore } from '../blobs/store.ts';
import type { ComfyClient } from '../comfyui/client.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import type { Backend } from '../contracts/render.ts';
import type { BackendHealth } from '../backends/health.ts';
import type { Client } from '@temporalio/client';

export interface ActivityDeps {
  config: Config;
  blobs: BlobStore;
  backends: Backend[];
  clients: Map<string, ComfyClient>;
  logger: Logger;
  /** Unhealthy-backend marks: written by runPrompt's escalation, read by chooseBackend and /health. */
  health: BackendHealth;
  /**
   * Stop the prompt in ComfyUI when this worker shuts down mid-prompt, instead of leaving it for the next attempt
   * to re-attach to. Set in a model-swapping proxy's GPU entry (mode `gpu`): the proxy hands the GPU to another
   * group once this process has exited, so a prompt left running would share the GPU with it.
   */
  stopPromptOnShutdown?: boolean;
  /** For the retention activity, which reads and deletes render executions (absent: it cannot run here). */
  temporal?: { client: Client; namespace: string };
}

export function clientFor(deps: Pick<ActivityDeps, 'clients'>, backend: Backend): ComfyClient {
  const client = deps.clients.get(backend.id);
  if (!client) throw new Error(`no ComfyUI client for backend ${backend.id}: is this worker configured with it?`);
  return client;
}
