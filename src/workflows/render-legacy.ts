/**
 * The `render` workflow as it was before prompts were bound late (kept so renders started before that
 * change replay and finish the way they began): build graph → choose backend → upload inputs → run each
 * prompt on the chosen backend's own single-slot queue → collect outputs. New renders take
 * render-late-bound.ts (render.ts decides with `patched()`).
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  proxyActivities,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RenderActivities, RunPromptInput } from '../activities/types.ts';
import type { BlobRef, PromptRun, RenderRequest, RenderResult, StageTiming } from '../render/types.ts';
import { RENDER_BACKEND } from '../temporal/search-attributes.ts';
import { attemptBackoffMs } from './attempts.ts';
import { GaveUpFailureType, NON_RETRYABLE_TYPES } from './failure-types.ts';
import { GPU_QUEUE_WAIT_MS, MIN_ATTEMPT_MS, describeFailure, type RenderStatus } from './render-common.ts';

const io = proxyActivities<RenderActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8, nonRetryableErrorTypes: NON_RETRYABLE_TYPES },
});

export async function renderLegacy(request: RenderRequest, status: RenderStatus): Promise<RenderResult> {
  const renderId = workflowInfo().workflowId;
  const timings: StageTiming[] = [];

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
    seeds: plan.items.map((i) => i.seed),
    request,
    backend: backend.id,
    promptIds: status.promptIds,
    timings,
  };

  async function renderItems(): Promise<void> {
    for (const item of plan.items) {
      status.stage = 'rendering';
      status.item = item.index;
      const runInput: Omit<RunPromptInput, 'attempt'> = { backend, renderId, item: item.index, graph: item.graph, stallTimeoutMs: limits.stallTimeoutMs };
      // Only LoadImage graphs need them; runPrompt re-uploads them if ComfyUI lost its input folder.
      if (plan.uploads.length > 0) runInput.uploads = plan.uploads;
      const run = await timed(`runPrompt[${item.index}]`, () => runItem(runInput));
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
    }
  }
}

