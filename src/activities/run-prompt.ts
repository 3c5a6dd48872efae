/**
 * `runPrompt`: submit one graph to ComfyUI and follow it to completion, heartbeating progress.
 *
 * Idempotency: the prompt id is derived from (workflow, run, item, attempt). An attempt first looks for the
 * prompts earlier attempts submitted — from its heartbeat details and by re-deriving their ids, which also
 * covers a crash between submit and the first heartbeat — and re-attaches to one that is still pending,
 * running or finished, instead of rendering again. Only when none is alive does it submit a new prompt.
 *
 * Failure handling (DESIGN §4):
 * - stall (no event, no queue movement for stallTimeout): cancel the prompt (jobs cancel, or dequeue +
 *   targeted interrupt); if it keeps running, `/free`; if it still runs, mark the backend unhealthy.
 * - cancellation of the render: cancel the prompt and wait until it stopped, so the workflow ends only when
 *   the GPU is free. Any other reason the activity is told to stop (worker shutdown, attempt timed out on
 *   the server) leaves the prompt running: the next attempt re-attaches to it, so nothing renders twice.
 * - ComfyUI lost an uploaded input (restarted on a fresh input folder): upload again, submit once more.
 * - out of memory: `/free` before the failure, so the retry finds VRAM and caches cleared.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { ComfyExecutionError, ComfyStallError, ComfyUnavailableError, ComfyValidationError, isComfyError } from '../comfyui/errors.ts';
import { followPrompt, submitAndFollow, type FollowProgress, type FollowResult } from '../comfyui/follow.ts';
import { attemptPromptId, type RenderExecution } from './prompt-ids.ts';
import { validateBeforeSubmit } from './presubmit.ts';
import type { ComfyClient } from '../comfyui/client.ts';
import type { Logger } from '../log.ts';
import {
  backendEscalations,
  inputReuploads,
  promptAttempts,
  promptReattached,
  promptStalls,
} from '../metrics/metrics.ts';
import type { Backend, PromptRun } from '../render/types.ts';
import type { BackendHealth } from '../worker/backend-health.ts';
import { toFailure } from './failures.ts';
import { ObjectInfoCache } from './object-info-cache.ts';
import type { PromptHeartbeat, RenderActivities, RunPromptInput } from './types.ts';
import { uploadAll } from './upload-inputs.ts';
import { clientFor, type ActivityDeps } from './index.ts';
import { FailureType, RetryableFailureType } from '../workflows/failure-types.ts';

/** Heartbeat tick. The SDK throttles the RPCs (worker.ts sets the cap), so ticking often costs nothing and
 *  lets a cancellation, which arrives only in a heartbeat response, reach us within seconds. */
const HEARTBEAT_TICK_MS = 1_000;
const STOP_POLL_MS = 250;

/** How long to wait for an interrupt (and then `/free`) to stop a prompt before escalating. */
export function stopGraceMs(stallTimeoutMs: number): number {
  return Math.min(15_000, Math.max(1_000, Math.floor(stallTimeoutMs / 4)));
}

/**
 * Retry delay while the backend is unhealthy: long enough for an operator or a supervisor to restart
 * ComfyUI between attempts, short enough that the render resumes soon after.
 */
export function unhealthyRetryDelayMs(stallTimeoutMs: number): number {
  return Math.min(60_000, Math.max(5_000, stallTimeoutMs));
}

export function createRunPrompt(deps: ActivityDeps): RenderActivities['runPrompt'] {
  const objectInfo = new ObjectInfoCache();

  return async (input: RunPromptInput): Promise<PromptRun> => {
    const ctx = Context.current();
    const { attempt } = input;
    const workflowExecution = ctx.info.workflowExecution ?? { workflowId: input.renderId, runId: '' };
    const backend = input.backend;
    const client = clientFor(deps, backend);
    const log = deps.logger.child({ renderId: input.renderId, item: input.item, attempt, backend: backend.id });
    const signal = ctx.cancellationSignal;
    const startedAt = Date.now();
    const graceMs = stopGraceMs(input.stallTimeoutMs);

    let beat: PromptHeartbeat = { backend: backend.id, promptId: '', lastEventAt: startedAt, attempt };
    const onProgress = (p: FollowProgress): void => {
      beat = { backend: backend.id, promptId: p.promptId, lastEventAt: p.lastEventAt ?? p.lastActivityAt, attempt };
      if (p.node !== undefined) beat.node = p.node;
      if (p.value !== undefined) beat.value = p.value;
      if (p.max !== undefined) beat.max = p.max;
      ctx.heartbeat(beat);
    };
    // Silent stretches (a model loading, the escalation below) still need heartbeats, or Temporal would
    // think the worker died.
    const ticker = setInterval(() => ctx.heartbeat(beat), HEARTBEAT_TICK_MS);
    const follow = { signal, stallTimeoutMs: input.stallTimeoutMs, pollIntervalMs: deps.config.POLL_INTERVAL_MS, onProgress, logger: log };

    let promptId = '';
    try {
      // ComfyUI coming back from a restart (tens of seconds with custom nodes) is waited for, within the
      // stall budget, instead of burning the item's attempts on connection errors.
      await waitReachable(client, input.stallTimeoutMs, deps.config.POLL_INTERVAL_MS, signal);
      await ensureBackendUsable(deps.health, backend, client, input.stallTimeoutMs);

      const previous = await findLivePrompt(client, previousPromptIds(workflowExecution, input.item, attempt), signal);
      let result: FollowResult;
      if (previous) {
        promptId = previous;
        log.info({ promptId }, 're-attaching to the prompt an earlier attempt submitted');
        promptReattached.inc({ backend: backend.id });
        beat = { ...beat, promptId };
        ctx.heartbeat(beat);
        // The prompt's events go to the socket of the attempt that submitted it, which has ended: reclaim
        // that client id, or a long remaining render would look stalled for want of progress events.
        const ownerClientId = await queuedClientId(client, promptId, signal);
        result = await followPrompt(client, { ...follow, promptId, ...(ownerClientId ? { ownerClientId } : {}) });
      } else {
        promptId = attemptPromptId(workflowExecution, input.item, attempt);
        await validateBeforeSubmit(client, input, objectInfo);
        result = await submitWithReupload(deps, client, input, objectInfo, log, {
          ...follow,
          graph: input.graph,
          promptId,
          extraData: { comfy_durable: { render_id: input.renderId, item: input.item, attempt } },
          // Stopping the prompt is decided here (it depends on why we stop), not in submitAndFollow.
          cancelOnAbortOrStall: false,
          onSubmitted: ({ reattached }) => {
            beat = { ...beat, promptId };
            ctx.heartbeat(beat);
            log.info({ promptId, reattached }, 'prompt submitted');
          },
        });
      }
      deps.health.markHealthy(backend, `prompt ${promptId} succeeded`);
      promptAttempts.inc({ backend: backend.id, outcome: 'success' });
      return {
        promptId,
        attempt,
        files: result.files.map(({ filename, subfolder, type }) => ({ filename, subfolder, type })),
        startedAt: result.startedAt ?? startedAt,
        finishedAt: result.finishedAt ?? Date.now(),
      };
    } catch (err) {
      if (signal.aborted) {
        const reason = cancelReason(signal.reason);
        promptAttempts.inc({ backend: backend.id, outcome: reason === 'CANCELLED' ? 'cancelled' : reason === 'WORKER_SHUTDOWN' ? 'worker_shutdown' : 'abandoned' });
        if (reason === 'CANCELLED' && promptId !== '') {
          // The render was cancelled: stop the GPU before the workflow is allowed to end.
          const stopped = await cancelAndWait(client, promptId, graceMs, log);
          log.info({ promptId, stopped }, 'render cancelled: prompt cancelled in ComfyUI');
        } else if (promptId !== '') {
          log.warn({ promptId, reason }, 'activity stopped without the render being cancelled: leaving the prompt running for the next attempt to re-attach');
        }
        throw signal.reason ?? err;
      }
      promptAttempts.inc({ backend: backend.id, outcome: outcomeLabel(err) });
      if (err instanceof ComfyStallError) {
        promptStalls.inc({ backend: backend.id, state: err.state });
        const stop = await stopStalledPrompt(deps.health, backend, client, err, graceMs, log);
        throw ApplicationFailure.create({
          message: `${err.message}; ${STOP_OUTCOME_TEXT[stop]}`,
          type: err.type,
          nonRetryable: false,
          details: [{ ...err.details(), stop }],
        });
      }
      if (err instanceof ComfyExecutionError && err.isOutOfMemory) {
        // CUDA OOM: free VRAM and caches before the retry, or it fails the same way.
        log.warn({ promptId }, 'out of memory: freeing ComfyUI memory before the retry');
        await client.free({ unloadModels: true, freeMemory: true }, { timeoutMs: 5_000 }).catch(() => undefined);
      }
      log.warn({ promptId, err: (err as Error).message }, 'runPrompt attempt failed');
      throw toFailure(err);
    } finally {
      clearInterval(ticker);
    }
  };
}

type StopOutcome = 'interrupted' | 'freed' | 'unhealthy' | 'unreachable';

const STOP_OUTCOME_TEXT: Record<StopOutcome, string> = {
  interrupted: 'the prompt was interrupted',
  freed: 'the interrupt did not take; the prompt stopped after /free',
  unhealthy: 'neither an interrupt nor /free stopped it: backend marked unhealthy',
  unreachable: 'ComfyUI is unreachable, nothing could be interrupted',
};

/** Interrupt a stalled prompt, escalating to `/free` and then to marking the backend unhealthy. */
async function stopStalledPrompt(
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

/** Cancel (jobs API, or dequeue + targeted interrupt) and wait up to `graceMs` for the prompt to stop. */
async function cancelAndWait(client: ComfyClient, promptId: string, graceMs: number, log: Logger): Promise<boolean> {
  try {
    // No abort signal: this runs precisely when the activity's signal has fired.
    await client.cancelJob(promptId, { timeoutMs: 5_000 });
  } catch (e) {
    log.warn({ promptId, err: (e as Error).message }, 'cancelling the prompt in ComfyUI failed');
  }
  return waitStopped(client, promptId, graceMs);
}

/** True once the prompt is neither pending nor running (finished, interrupted, or gone). */
async function waitStopped(client: ComfyClient, promptId: string, graceMs: number): Promise<boolean> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    try {
      const st = await client.promptStatus(promptId, { timeoutMs: 5_000 });
      if (st.state !== 'running' && st.state !== 'pending') return true;
    } catch {
      // Unreachable right now: keep trying until the grace ends.
    }
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, STOP_POLL_MS));
  }
}

/** Resolves once ComfyUI answers `/queue`; rethrows the connection error after `budgetMs`. */
async function waitReachable(client: ComfyClient, budgetMs: number, everyMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + budgetMs;
  for (;;) {
    try {
      await client.getQueue({ signal, timeoutMs: 10_000 });
      return;
    } catch (e) {
      if (!(e instanceof ComfyUnavailableError) || Date.now() + everyMs > deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Refuse to submit to a backend still marked unhealthy (a wedged ComfyUI runs nothing new). */
async function ensureBackendUsable(health: BackendHealth, backend: Backend, client: ComfyClient, stallTimeoutMs: number): Promise<void> {
  if (!health.get(backend)) return;
  const mark = await health.recheck(backend, client);
  if (!mark) return;
  const retryAfterMs = unhealthyRetryDelayMs(stallTimeoutMs);
  throw ApplicationFailure.create({
    message: `ComfyUI backend ${backend.id} (${backend.url}) is unhealthy since ${new Date(mark.since).toISOString()}: ${mark.reason}`,
    type: RetryableFailureType.BackendUnhealthy,
    nonRetryable: false,
    nextRetryDelay: retryAfterMs,
    // The workflow paces its own attempts and cannot read nextRetryDelay back from a failure: say it in details.
    details: [{ ...mark, retryAfterMs }],
  });
}

/**
 * Submit; when ComfyUI says a LoadImage file is missing (HTTP 400, nothing queued), upload the render's
 * inputs again and submit once more with the same prompt id.
 */
async function submitWithReupload(
  deps: ActivityDeps,
  client: ComfyClient,
  input: RunPromptInput,
  objectInfo: ObjectInfoCache,
  log: Logger,
  opts: Parameters<typeof submitAndFollow>[1],
): Promise<FollowResult> {
  let reuploaded = false;
  for (;;) {
    try {
      return await submitAndFollow(client, opts);
    } catch (e) {
      const uploads = input.uploads ?? [];
      if (!(e instanceof ComfyValidationError) || !e.missingInputFile || e.status !== 400 || reuploaded || uploads.length === 0) throw e;
      reuploaded = true;
      log.warn({ promptId: opts.promptId, files: uploads.map((u) => `${u.subfolder}/${u.filename}`) }, 'ComfyUI lost uploaded inputs: uploading them again');
      inputReuploads.inc({ backend: input.backend.id });
      await uploadAll(deps, input.backend, uploads);
      objectInfo.invalidate(input.backend.id);
    }
  }
}

/** `CancelledFailure.message` is the SDK's reason: CANCELLED, WORKER_SHUTDOWN, TIMED_OUT, NOT_FOUND, ... */
function cancelReason(reason: unknown): string | undefined {
  return reason instanceof CancelledFailure ? reason.message : undefined;
}

function outcomeLabel(err: unknown): string {
  if (!isComfyError(err)) {
    return err instanceof ApplicationFailure && err.type === RetryableFailureType.BackendUnhealthy ? 'backend_unhealthy' : 'error';
  }
  switch (err.type) {
    case 'ComfyStall':
      return 'stall';
    case 'ComfyPromptLost':
      return 'lost';
    case 'ComfyOutOfMemory':
      return 'oom';
    case 'ComfyExecution':
      return 'execution_error';
    case 'ComfyValidation':
      return 'validation';
    case 'ComfyUnavailable':
    case 'ComfyProtocol':
      return 'unavailable';
    case 'ComfyInterrupted':
      return 'interrupted';
    default:
      return 'error';
  }
}

/**
 * Ids earlier attempts may have submitted, newest first. Re-derived rather than read from heartbeat details:
 * each attempt is a new activity, so no details carry over, and a crash before the first heartbeat is covered.
 */
function previousPromptIds(exec: RenderExecution, item: number, attempt: number): string[] {
  const ids: string[] = [];
  for (let a = attempt - 1; a >= 1; a--) ids.push(attemptPromptId(exec, item, a));
  return ids;
}

/** `client_id` of a pending or running prompt, from `/queue` (undefined when finished or unknown). */
async function queuedClientId(client: ComfyClient, promptId: string, signal: AbortSignal): Promise<string | undefined> {
  const q = await client.getQueue({ signal });
  return [...q.running, ...q.pending].find((e) => e.promptId === promptId)?.clientId;
}

/** The first candidate ComfyUI still has pending, running or finished successfully. */
async function findLivePrompt(client: ComfyClient, ids: string[], signal: AbortSignal): Promise<string | undefined> {
  for (const id of ids) {
    const status = await client.promptStatus(id, { signal });
    if (status.state === 'pending' || status.state === 'running' || status.state === 'success') return id;
  }
  return undefined;
}
