/**
 * How a `runPrompt` attempt (run-prompt.ts) ends when it does not succeed: what it stops in ComfyUI, and the
 * failure the workflow sees (docs/durability.md).
 * - told to stop (attemptStopped): the render cancelled stops the prompt before the workflow may end, and
 *   keeps what was rendered; a worker shutdown or a server-side timeout leaves it running for the next
 *   attempt to re-attach (its ComfyUI stays busy in this worker's pool until the prompt has left its queue),
 *   except a model-swapping proxy's GPU entry shutting down (`stopPromptOnShutdown`).
 * - failed (attemptFailure): a stall stops the prompt (escalating to `/free`, then marking the backend
 *   unhealthy); a ComfyUI that refuses connections is marked unhealthy so the retry runs elsewhere; out of
 *   memory frees VRAM before the retry.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { ComfyExecutionError, ComfyStallError, ComfyUnavailableError } from '../comfyui/errors.ts';
import { promptAttempts, promptStalls } from '../metrics/metrics.ts';
import type { ImageRender, PromptRun } from '../contracts/render.ts';
import { cancelReason, outcomeLabel } from './attempt-outcome.ts';
import type { Attempt, AttemptPreviews, Reached } from './attempt-state.ts';
import type { PromptHeartbeat } from '../contracts/activities.ts';
import { toFailure, withBackend } from './failures.ts';
import { hasPartialImage, storePartialImage } from './partial-output.ts';
import { previousPrompts } from './reattach.ts';
import { STOP_OUTCOME_TEXT, cancelAndWait, stopStalledPrompt } from './stop-prompt.ts';

/** After a backend refused connections, the next attempt (on another backend) starts this soon. */
const DEAD_BACKEND_RETRY_MS = 1_000;

/** What the attempt had when it was told to stop: the last heartbeat (its step) and the last preview frame. */
export interface StoppedAt {
  beat: PromptHeartbeat;
  previews: AttemptPreviews;
}

/**
 * The activity was told to stop (`at.signal` aborted): stop what must not outlive it, then rethrow the reason;
 * a cancelled render that has a preview answers with it as the item's partial result instead.
 */
export async function attemptStopped(at: Attempt, reached: Reached, stoppedAt: StoppedAt, err: unknown): Promise<PromptRun> {
  const { backend, log } = reached.target;
  const { promptId } = reached;
  const reason = cancelReason(at.signal.reason);
  promptAttempts.inc({ backend: backend.id, outcome: reason === 'CANCELLED' ? 'cancelled' : reason === 'WORKER_SHUTDOWN' ? 'worker_shutdown' : 'abandoned' });
  if (reason === 'CANCELLED' && promptId !== '') {
    const partial = await stopCancelled(at, reached, stoppedAt);
    if (partial) return partial;
  } else if (reason === 'WORKER_SHUTDOWN' && at.deps.stopPromptOnShutdown) {
    await stopHandedAway(at, reached);
  } else if (promptId !== '') {
    log.warn({ promptId, reason }, 'activity stopped without the render being cancelled: leaving the prompt running for the next attempt to re-attach');
    at.leftRunning = { target: reached.target, promptId };
  }
  throw at.signal.reason ?? err;
}

/**
 * The render was cancelled: stop the GPU before the workflow is allowed to end. Interrupt and skip keep what
 * was rendered: the workflow takes the partial result for the stopped item (and ends as cancelled when the
 * whole render was).
 */
async function stopCancelled(at: Attempt, reached: Reached, { beat, previews }: StoppedAt): Promise<PromptRun | undefined> {
  const { client, log, backend } = reached.target;
  const { promptId } = reached;
  const stopped = await cancelAndWait(client, promptId, at.graceMs, log);
  log.info({ promptId, stopped }, 'render cancelled: prompt cancelled in ComfyUI');
  const preview = previews.last;
  const { request } = at.input;
  if (!preview || !hasPartialImage(request)) return undefined;
  return partialRun(at, request, preview, { promptId, backend: backend.id, beat }).catch((e: unknown) => {
    log.warn({ promptId, err: (e as Error).message }, 'could not keep the partial image of the stopped prompt');
    return undefined;
  });
}

/**
 * The proxy is taking the GPU away and gives it on once this process exits: no prompt may outlive it on this
 * ComfyUI. A submission whose answer never came may still be queued after the cancel (waited for); stopped
 * while looking for an earlier attempt's prompt, every earlier attempt's is stopped here. The next attempt
 * finds them interrupted and renders the item afresh: one complete render, nothing lost.
 */
async function stopHandedAway(at: Attempt, reached: Reached): Promise<void> {
  const { client, log } = reached.target;
  const targets = reached.promptId ? [reached.promptId] : previousPrompts(at.execution, at.input).map((p) => p.promptId);
  for (const target of targets) {
    const stopped = await cancelAndWait(client, target, at.graceMs, log, { mayStillArrive: reached.submitSent && !reached.submitConfirmed });
    log.warn({ promptId: target, stopped }, 'GPU handed away mid-prompt: prompt stopped in ComfyUI; the next attempt renders it again');
  }
}

/** The stopped prompt's result: its last preview as the item's image, marked partial. */
async function partialRun(
  at: Attempt,
  request: ImageRender,
  preview: Buffer,
  stopped: { promptId: string; backend: string; beat: PromptHeartbeat },
): Promise<PromptRun> {
  const ref = await storePartialImage(at.deps.blobs, preview, request, at.input.item);
  const { beat } = stopped;
  return {
    promptId: stopped.promptId,
    attempt: at.input.attempt,
    files: [],
    startedAt: at.startedAt,
    finishedAt: Date.now(),
    outputs: [ref],
    backend: stopped.backend,
    timings: at.timings,
    partial: { ...(beat.value !== undefined ? { step: beat.value } : {}), ...(beat.max !== undefined ? { steps: beat.max } : {}) },
  };
}

/** The attempt failed on its own: stop or free what the failure calls for, and the failure the workflow retries on. */
export async function attemptFailure(at: Attempt, reached: Reached, err: unknown): Promise<unknown> {
  const { backend, client, log } = reached.target;
  const { promptId } = reached;
  promptAttempts.inc({ backend: backend.id, outcome: outcomeLabel(err) });
  if (err instanceof ComfyStallError) {
    promptStalls.inc({ backend: backend.id, state: err.state });
    const stop = await stopStalledPrompt(at.deps.health, backend, client, err, at.graceMs, log);
    return ApplicationFailure.create({
      message: `${err.message}; ${STOP_OUTCOME_TEXT[stop]}`,
      type: err.type,
      nonRetryable: false,
      details: [{ ...err.details(), stop, backend: backend.id }],
    });
  }
  if (err instanceof ComfyUnavailableError && err.refusedForMs !== undefined) {
    // Its process is gone: no new attempt may lease it until it answers again (the worker's probe clears
    // the mark), so the next attempt, soon, runs on another GPU. Its queue died with it: nothing renders twice.
    at.deps.health.markUnhealthy(backend, { reason: `refuses connections (${err.message})`, ...(promptId ? { abandonedPromptId: promptId } : {}) });
    log.warn({ promptId, refusedForMs: err.refusedForMs }, 'ComfyUI refuses connections: moving the item to another backend');
    return ApplicationFailure.create({
      message: err.message,
      type: err.type,
      nonRetryable: false,
      details: [{ ...err.details(), backend: backend.id, retryAfterMs: DEAD_BACKEND_RETRY_MS }],
    });
  }
  if (err instanceof ComfyExecutionError && err.isOutOfMemory) {
    // CUDA OOM: free VRAM and caches before the retry, or it fails the same way.
    log.warn({ promptId }, 'out of memory: freeing ComfyUI memory before the retry');
    await client.free({ unloadModels: true, freeMemory: true }, { timeoutMs: 5_000 }).catch(() => undefined);
  }
  log.warn({ promptId, err: (err as Error).message }, 'runPrompt attempt failed');
  return withBackend(toFailure(err), backend.id);
}
