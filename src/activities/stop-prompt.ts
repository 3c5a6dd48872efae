/**
 * Stopping a prompt in ComfyUI: a targeted cancel, then `/free`, then marking the backend unhealthy when a
 * stalled prompt survives both (the escalation of docs/durability.md).
 */
import type { ComfyClient } from '../comfyui/client.ts';
import type { ComfyStallError } from '../comfyui/errors.ts';
import type { Logger } from '../log.ts';
import { backendEscalations } from '../metrics/metrics.ts';
import type { Backend } from '../contracts/render.ts';
import type { BackendHealth } from '../backends/health.ts';

const STOP_POLL_MS = 250;

export type StopOutcome = 'interrupted' | 'freed' | 'unhealthy' | 'unreachable';

export const STOP_OUTCOME_TEXT: Record<StopOutcome, string> = {
  interrupted: 'the prompt was interrupted',
  freed: 'the interrupt did not take; the prompt stopped after /free',
  unhealthy: 'neither an interrupt nor /free stopped it: backend marked unhealthy',
  unreachable: 'ComfyUI is unreachable, nothing could be interrupted',
};

/** Interrupt a stalled prompt, escalating to `/free` and then to marking the backend unhealthy. */
export async function stopStalledPrompt(
  health: BackendHealth,
  backend: Backend,
  client: ComfyClient,
  stall: ComfyStallError,
  graceMs: number,
  log: Logger,
): Promise<StopOutcome> {
  const promptId = stall.promptId;
  if (stall.state === 'unreachable') {
    await client.cancelJob(promptId, { timeoutMs: 5_000 }).catch(() => undefined);
    return 'unreachable';
  }
  if (await cancelAndWait(client, promptId, graceMs, log)) {
    log.warn({ promptId, silentForMs: stall.silentForMs, state: stall.state }, 'stalled prompt interrupted; a new attempt follows');
    return 'interrupted';
  }
  backendEscalations.inc({ backend: backend.id, step: 'free' });
  log.error({ promptId }, 'interrupt did not stop the stalled prompt: POST /free');
  await client.free({ unloadModels: true, freeMemory: true }, { timeoutMs: 5_000 }).catch((e: unknown) => log.warn({ err: e }, '/free failed'));
  if (await waitStopped(client, promptId, graceMs)) return 'freed';
  backendEscalations.inc({ backend: backend.id, step: 'unhealthy' });
  health.markUnhealthy(backend, {
    reason: `prompt ${promptId} stalled (no progress for ${Math.round(stall.silentForMs / 1000)} s) and kept running after an interrupt and /free: restart ComfyUI`,
    stuckPromptId: promptId,
  });
  return 'unhealthy';
}

/**
 * Cancel (jobs API, or dequeue + targeted interrupt) and wait up to `graceMs` for the prompt to stop.
 * `mayStillArrive`: its `POST /prompt` was in flight and never answered. ComfyUI validates a prompt before it
 * queues it, so the cancel can reach it first and find nothing; "unknown" then means "not queued yet", not
 * "gone", and the cancel is sent again once it shows up.
 */
export async function cancelAndWait(
  client: ComfyClient,
  promptId: string,
  graceMs: number,
  log: Logger,
  opts: { mayStillArrive?: boolean } = {},
): Promise<boolean> {
  await cancel(client, promptId, log);
  return waitStopped(client, promptId, graceMs, opts.mayStillArrive ? () => cancel(client, promptId, log) : undefined);
}

async function cancel(client: ComfyClient, promptId: string, log: Logger): Promise<void> {
  try {
    // No abort signal: this runs precisely when the activity's signal has fired.
    await client.cancelJob(promptId, { timeoutMs: 5_000 });
  } catch (e) {
    log.warn({ promptId, err: (e as Error).message }, 'cancelling the prompt in ComfyUI failed');
  }
}

/** True once the prompt is neither pending nor running (finished, interrupted, or gone). */
async function waitStopped(client: ComfyClient, promptId: string, graceMs: number, cancelOnArrival?: () => Promise<void>): Promise<boolean> {
  const deadline = Date.now() + graceMs;
  let arrived = false;
  for (;;) {
    try {
      const st = await client.promptStatus(promptId, { timeoutMs: 5_000 });
      if (st.state === 'running' || st.state === 'pending') {
        if (cancelOnArrival && !arrived) {
          arrived = true;
          await cancelOnArrival();
        }
      } else if (!(st.state === 'unknown' && cancelOnArrival && !arrived)) {
        return true;
      }
    } catch {
      // Unreachable right now: keep trying until the grace ends.
    }
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, STOP_POLL_MS));
  }
}
