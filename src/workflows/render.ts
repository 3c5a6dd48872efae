/**
 * The `render` workflow: deterministic orchestration only, every effect is an activity.
 * build graph → choose backend → upload inputs → run each prompt (submit + follow) → collect outputs.
 * Payloads are small JSON (graphs and blob references); image bytes never enter history.
 *
 * Prompt attempts are paced here, not by Temporal's activity retry policy: each attempt is its own
 * `runPrompt` activity (maximumAttempts 1), so history shows every attempt with its own failure (a
 * retried activity keeps only the last one), and the attempt number in the deterministic prompt id is the
 * workflow's count. Attempts are bounded by the profile's `maxAttempts` and per-item `deadlineMs`.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  TimeoutFailure,
  defineQuery,
  defineSignal,
  isCancellation,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RenderActivities, RunPromptInput } from '../activities/types.ts';
import type { BlobRef, PromptRun, RenderRequest, RenderResult, StageTiming } from '../render/types.ts';
import { RENDER_BACKEND } from '../temporal/search-attributes.ts';
import { attemptBackoffMs } from './attempts.ts';
import { GaveUpFailureType, NON_RETRYABLE_TYPES } from './failure-types.ts';

/** One runPrompt attempt as the status query reports it (history has the full failure). */
export interface PromptAttempt {
  item: number;
  attempt: number;
  outcome: 'completed' | 'failed';
  promptId?: string;
  /** Failure type (ComfyStall, ComfyPromptLost, Timeout, WorkerShutdown, ...) and message. */
  type?: string;
  message?: string;
}

export interface RenderStatus {
  stage: 'building' | 'choosing-backend' | 'uploading' | 'rendering' | 'collecting' | 'done';
  item: number;
  items: number;
  backend?: string;
  promptIds: string[];
  attempts: PromptAttempt[];
  /** Set once `/sdapi/v1/interrupt` stopped the render: it ends with the images finished so far. */
  interrupted?: boolean;
  /** Items `/sdapi/v1/skip` ended early (they have no image). */
  skipped?: number[];
}

export const renderStatusQuery = defineQuery<RenderStatus>('status');
/** A1111 interrupt: stop the current item and end the render with the images finished so far. */
export const interruptSignal = defineSignal('interrupt');
/** A1111 skip: end the current item of the batch and go on with the next. */
export const skipSignal = defineSignal('skip');

const io = proxyActivities<RenderActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8, nonRetryableErrorTypes: NON_RETRYABLE_TYPES },
});

/** How long an attempt may wait for the backend's GPU slot before it counts as failed (queue unserved). */
const GPU_QUEUE_WAIT_MS = 60 * 60_000;

/** An attempt needs at least this much of the item's deadline left to be worth starting. */
const MIN_ATTEMPT_MS = 1_000;

export async function render(request: RenderRequest): Promise<RenderResult> {
  const renderId = workflowInfo().workflowId;
  const timings: StageTiming[] = [];
  const status: RenderStatus = { stage: 'building', item: 0, items: request.batchSize * request.nIter, promptIds: [], attempts: [] };
  setHandler(renderStatusQuery, () => status);
  /** The running item's scope: interrupt and skip cancel it (runPrompt then stops its prompt in ComfyUI). */
  let itemScope: CancellationScope | undefined;
  let skipCurrent = false;
  setHandler(interruptSignal, () => {
    status.interrupted = true;
    itemScope?.cancel();
  });
  setHandler(skipSignal, () => {
    if (!itemScope) return;
    skipCurrent = true;
    itemScope.cancel();
  });

  const timed = async <T>(stage: string, fn: () => Promise<T>): Promise<T> => {
    const start = Date.now();
    try {
      return await fn();
    } finally {
      timings.push({ stage, ms: Date.now() - start });
    }
  };

  const { plan, limits } = await timed('buildGraph', () => io.buildGraph({ request, renderId }));

  status.stage = 'choosing-backend';
  const backend = await timed('chooseBackend', () => io.chooseBackend({ model: request.model }));
  status.backend = backend.id;
  upsertSearchAttributes([{ key: RENDER_BACKEND, value: backend.id }]);

  if (plan.uploads.length > 0) {
    status.stage = 'uploading';
    await timed('uploadInputs', () => io.uploadInputs({ backend, uploads: plan.uploads }));
  }

  /** The item whose attempts may have left a prompt running in ComfyUI, and how many attempts it had. */
  const started = { item: -1, attempts: 0 };

  /** Attempts of one item until it renders, fails for good, or runs out of attempts or time. */
  const runItem = async (input: Omit<RunPromptInput, 'attempt'>): Promise<PromptRun> => {
    const deadline = Date.now() + limits.deadlineMs;
    for (let attempt = 1; ; attempt++) {
      started.item = input.item;
      started.attempts = attempt;
      // Prompts run on the backend's own task queue, which has exactly one slot per ComfyUI: waiting happens
      // in Temporal's durable queue, never in ComfyUI's in-memory one.
      const gpu = proxyActivities<RenderActivities>({
        taskQueue: backend.taskQueue,
        startToCloseTimeout: Math.max(MIN_ATTEMPT_MS, deadline - Date.now()),
        // A GPU queue nobody serves (its worker died, or GPU_BACKENDS is wrong) must not hold a client forever.
        scheduleToStartTimeout: GPU_QUEUE_WAIT_MS,
        heartbeatTimeout: limits.heartbeatTimeoutMs,
        retry: { maximumAttempts: 1 },
        // A cancelled render ends only once runPrompt has stopped its prompt in ComfyUI. Spelled out: the
        // SDK documents this as the default, but an unset option reaches Core as 0 = TRY_CANCEL, which
        // ends the workflow at once while the GPU keeps rendering.
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      });
      try {
        const run = await gpu.runPrompt({ ...input, attempt });
        status.attempts.push({ item: input.item, attempt, outcome: 'completed', promptId: run.promptId });
        return run;
      } catch (err) {
        // The render itself was cancelled: runPrompt has stopped the prompt; end as cancelled.
        if (CancellationScope.current().consideredCancelled) throw err;
        const f = describeFailure(err);
        status.attempts.push({ item: input.item, attempt, outcome: 'failed', type: f.type, message: f.message });
        if (!f.retryable) throw err;
        const delay = f.retryAfterMs ?? attemptBackoffMs(attempt);
        const outOfTime = Date.now() + delay + MIN_ATTEMPT_MS > deadline;
        if (attempt >= limits.maxAttempts || outOfTime) {
          const why = outOfTime ? `its ${Math.round(limits.deadlineMs / 1000)} s deadline` : `${attempt} attempts`;
          throw ApplicationFailure.create({
            type: GaveUpFailureType,
            message: `item ${input.item} did not render within ${why}; last attempt: ${f.type}: ${f.message}`,
            nonRetryable: true,
            details: [{ item: input.item, attempts: status.attempts.filter((a) => a.item === input.item) }],
            cause: err instanceof Error ? err : undefined,
          });
        }
        await sleep(delay);
      }
    }
  };

  const outputs: BlobRef[] = [];
  const rendered: typeof plan.items = [];
  try {
    await renderItems();
  } catch (err) {
    // Cancelled, or out of attempts or time: an attempt that timed out or was handed back by a stopping
    // worker left its prompt running for a re-attach that will now never come. Stop it, even though this
    // workflow is being cancelled, so the GPU is free for the next render.
    // (A ComfyUI failure that ended the render — validation, a node exception — left nothing running.)
    const mayBeLive = CancellationScope.current().consideredCancelled || (err instanceof ApplicationFailure && err.type === GaveUpFailureType);
    if (started.attempts > 0 && mayBeLive) {
      const { item, attempts } = started;
      await CancellationScope.nonCancellable(() => io.stopPrompts({ backend, item, attempts }));
    }
    // A cancel that arrives together with a failed attempt (a worker handed its attempt back just as the render
    // was cancelled) surfaces as that activity's failure: end the render as cancelled all the same.
    if (CancellationScope.current().consideredCancelled && !(err instanceof CancelledFailure)) {
      throw new CancelledFailure('render cancelled', [], err instanceof Error ? err : undefined);
    }
    throw err;
  }
  status.stage = 'done';

  return {
    renderId,
    outputs,
    seeds: rendered.map((i) => i.seed),
    ...(status.interrupted ? { interrupted: true } : {}),
    ...(status.skipped && status.skipped.length > 0 ? { skipped: status.skipped } : {}),
    request,
    backend: backend.id,
    promptIds: status.promptIds,
    timings,
  };

  async function renderItems(): Promise<void> {
    for (const item of plan.items) {
      if (status.interrupted) break;
      status.stage = 'rendering';
      status.item = item.index;
      const runInput: Omit<RunPromptInput, 'attempt'> = { backend, renderId, item: item.index, graph: item.graph, stallTimeoutMs: limits.stallTimeoutMs };
      // Only LoadImage graphs need them; runPrompt re-uploads them if ComfyUI lost its input folder.
      if (plan.uploads.length > 0) runInput.uploads = plan.uploads;
      const scope = new CancellationScope();
      itemScope = scope;
      skipCurrent = false;
      let run: PromptRun;
      try {
        run = await scope.run(() => timed(`runPrompt[${item.index}]`, () => runItem(runInput)));
      } catch (err) {
        // Interrupted or skipped: runPrompt has stopped the prompt (the activity waits for that), nothing of
        // this item is left running. Interrupt ends the render, skip goes on with the next item.
        if ((status.interrupted || skipCurrent) && isCancellation(err) && !CancellationScope.current().consideredCancelled) {
          started.attempts = 0;
          if (status.interrupted) break;
          (status.skipped ??= []).push(item.index);
          continue;
        }
        throw err;
      } finally {
        itemScope = undefined;
      }
      // The prompt finished: nothing of this item is left running in ComfyUI.
      started.attempts = 0;
      status.promptIds.push(run.promptId);
      status.stage = 'collecting';
      const refs = await timed(`collectOutputs[${item.index}]`, () =>
        io.collectOutputs({ backend, files: run.files, request, itemIndex: item.index }),
      );
      if (refs.length === 0) {
        throw ApplicationFailure.nonRetryable(`prompt ${run.promptId} produced no images`, 'NoOutputs');
      }
      outputs.push(...refs);
      rendered.push(item);
    }
  }
}

function describeFailure(err: unknown): { type: string; message: string; retryable: boolean; retryAfterMs?: number } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const type = cause.type ?? 'Error';
    const d = cause.details?.[0];
    const retryAfter = d && typeof d === 'object' ? (d as { retryAfterMs?: unknown }).retryAfterMs : undefined;
    const r: ReturnType<typeof describeFailure> = {
      type,
      message: cause.message,
      retryable: !cause.nonRetryable && !NON_RETRYABLE_TYPES.includes(type),
    };
    if (typeof retryAfter === 'number' && retryAfter > 0) r.retryAfterMs = retryAfter;
    return r;
  }
  if (cause instanceof TimeoutFailure) {
    // Heartbeat timeout: the worker died mid-prompt. The next attempt re-attaches to the prompt it left.
    return { type: `Timeout:${cause.timeoutType ?? 'unknown'}`, message: cause.message, retryable: true };
  }
  if (cause instanceof CancelledFailure) {
    // Not a cancellation of the render (checked before): a worker shut down and handed the attempt back.
    return { type: 'WorkerShutdown', message: cause.message, retryable: true };
  }
  const e = cause instanceof Error ? cause : new Error(String(cause));
  return { type: e.name || 'Error', message: e.message, retryable: true };
}
