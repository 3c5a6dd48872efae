/** Before an attempt submits: its backend is not marked unhealthy, and answers (or is found dead). */
import { ApplicationFailure } from '@temporalio/activity';
import type { BackendHealth } from '../backends/health.ts';
import type { ComfyClient } from '../comfyui/client.ts';
import { ComfyUnavailableError } from '../comfyui/errors.ts';
import type { Backend } from '../contracts/render.ts';
import { RetryableFailureType } from '../contracts/failures.ts';

/**
 * How long ComfyUI may refuse every connection before the attempt gives up on it: nothing listens on its
 * port, so its process (and its in-memory queue) is gone; the item moves to another GPU at once instead of
 * after the whole stall timeout. A quick restart (a few seconds) is still waited for.
 */
export function deadBackendMs(stallTimeoutMs: number): number {
  return Math.min(10_000, stallTimeoutMs);
}

/**
 * Resolves once ComfyUI answers `/queue`; rethrows the connection error after `budgetMs`, or once every
 * connection was refused for `refusedDeadMs` (with `refusedForMs` set: its process is gone).
 */
export async function waitReachable(client: ComfyClient, budgetMs: number, refusedDeadMs: number, everyMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + budgetMs;
  let refusedSince: number | undefined;
  for (;;) {
    try {
      await client.getQueue({ signal, timeoutMs: 10_000 });
      return;
    } catch (e) {
      if (!(e instanceof ComfyUnavailableError) || Date.now() + everyMs > deadline) throw e;
      refusedSince = e.refused ? (refusedSince ?? Date.now()) : undefined;
      if (refusedSince !== undefined && Date.now() - refusedSince >= refusedDeadMs) {
        const refusedForMs = Date.now() - refusedSince;
        throw new ComfyUnavailableError({
          url: e.url,
          refusedForMs,
          cause: e,
          message: `ComfyUI at ${e.url} refused every connection for ${Math.round(refusedForMs / 1000)} s: its process is gone`,
        });
      }
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Refuse to submit to a backend still marked unhealthy (a wedged ComfyUI runs nothing new). */
export async function ensureBackendUsable(health: BackendHealth, backend: Backend, client: ComfyClient, retryAfterMs: number): Promise<void> {
  if (!health.get(backend)) return;
  const mark = await health.recheck(backend, client);
  if (!mark) return;
  throw ApplicationFailure.create({
    message: `ComfyUI backend ${backend.id} (${backend.url}) is unhealthy since ${new Date(mark.since).toISOString()}: ${mark.reason}`,
    type: RetryableFailureType.BackendUnhealthy,
    nonRetryable: false,
    nextRetryDelay: retryAfterMs,
    // The workflow paces its own attempts and cannot read nextRetryDelay back from a failure: say it in details.
    details: [{ ...mark, retryAfterMs }],
  });
}
