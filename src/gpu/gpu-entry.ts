/**
 * Wiring of the GPU-sharing pieces into a process (app/services.ts): the GPU entry's lease server and VRAM
 * release (mode `gpu`), and a front's lease holder (GPU_LEASE_URL).
 */
import type { Client } from '@temporalio/client';
import type { ComfyClient } from '../comfyui/client.ts';
import { ConfigError, type Config } from '../config/config.ts';
import type { Logger } from '../log.ts';
import type { Backend } from '../contracts/render.ts';
import { waitingRendersQuery } from '../contracts/search-attributes.ts';
import { GpuLeaseHolder } from './lease-holder.ts';
import { startLeaseServer, type LeaseServer } from './lease-server.ts';

/** Mode `gpu` listens on HOST:PORT for the proxy's readiness check and the leases, before Temporal is reached. */
export async function startGpuEntryServer(config: Config, logger: Logger): Promise<LeaseServer> {
  if (!config.GPU_LEASE_TOKEN) {
    throw new ConfigError(
      "invalid configuration:\n  GPU_LEASE_TOKEN: required in `gpu` mode (the front's lease presents it; without it anyone who reaches the proxy could hold the GPU)",
    );
  }
  return startLeaseServer({
    host: config.HOST,
    port: config.PORT,
    token: config.GPU_LEASE_TOKEN,
    sliceMs: config.GPU_LEASE_SLICE_MS,
    logger: logger.child({ component: 'gpu-lease' }),
    // The same path as the proxy's own SIGTERM (drain, stop the prompt in ComfyUI, /free), started early enough.
    onProxyStopping: () => process.kill(process.pid, 'SIGTERM'),
  });
}

/**
 * Give the VRAM back when the proxy takes the GPU away: ComfyUI keeps its models loaded after the worker stops,
 * so the next group would load beside them. `/free` is acted on after the running prompt, if one outlived the
 * drain. A ComfyUI that does not answer (stopped with the entry, or hung) is logged, not waited for.
 */
export async function freeVram(backends: Backend[], clients: Map<string, ComfyClient>, logger: Logger): Promise<void> {
  await Promise.all(
    backends.map(async (b) => {
      try {
        await clients.get(b.id)!.free({ unloadModels: true, freeMemory: true }, { timeoutMs: 5_000 });
        logger.info({ backend: b.id }, 'GPU handed back: ComfyUI asked to unload its models');
      } catch (err) {
        logger.warn({ backend: b.id, err: (err as Error).message }, 'GPU handed back: ComfyUI did not take /free (stopped or unreachable)');
      }
    }),
  );
}

/**
 * What each ComfyUI is now: "marked: <why>" when a stall or failure marked it (backends/health.ts: a hung ComfyUI
 * that still answers HTTP is caught by that mark), else "up" when it answers `/system_stats` within 2 s, else
 * "unreachable: <error>".
 */
export function describeBackends(
  backends: readonly Backend[],
  clients: Map<string, ComfyClient>,
  unhealthy: () => Map<string, string>,
): () => Promise<Record<string, string>> {
  return async () => {
    const marked = unhealthy();
    const states = await Promise.all(
      backends.map(async (b): Promise<[string, string]> => {
        const mark = marked.get(b.id);
        if (mark !== undefined) return [b.id, `marked: ${mark}`];
        return clients
          .get(b.id)!
          .systemStats({ timeoutMs: 2_000 })
          .then(
            (): [string, string] => [b.id, 'up'],
            (err: unknown): [string, string] => [b.id, `unreachable: ${(err as Error).message}`],
          );
      }),
    );
    return Object.fromEntries(states);
  };
}

/** Whether some ComfyUI could run a prompt (describeBackends says "up" for one). */
export function anyBackendUsable(
  backends: readonly Backend[],
  clients: Map<string, ComfyClient>,
  unhealthy: () => Map<string, string>,
): () => Promise<boolean> {
  const describe = describeBackends(backends, clients, unhealthy);
  return async () => Object.values(await describe()).includes('up');
}

/** The front's lease holder, counting running renders on the task queue in Temporal (every front's). */
export function startLeaseHolder(config: Config, client: Client, logger: Logger, usable?: () => Promise<boolean>): GpuLeaseHolder | undefined {
  if (!config.GPU_LEASE_URL || !config.GPU_LEASE_TOKEN) return undefined;
  const holder = new GpuLeaseHolder({
    url: config.GPU_LEASE_URL,
    token: config.GPU_LEASE_TOKEN,
    pollMs: config.GPU_LEASE_POLL_MS,
    // Behind llama-swap's apiKeys the guide makes API_TOKEN the same key: the lease presents it by default.
    ...(config.GPU_LEASE_AUTHORIZATION || config.API_TOKEN ? { authorization: config.GPU_LEASE_AUTHORIZATION ?? `Bearer ${config.API_TOKEN}` } : {}),
    pending: async () => (await client.workflow.count(waitingRendersQuery(config.TEMPORAL_TASK_QUEUE))).count,
    ...(usable ? { usable } : {}),
    logger: logger.child({ component: 'gpu-lease' }),
  });
  holder.start();
  return holder;
}
