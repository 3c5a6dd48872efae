/**
 * The `render` workflow: deterministic orchestration only, every effect is an activity.
 *
 * The submitter built the graphs and limits (renders/build-render.ts) and passed them as the second
 * argument, so they are in history as the input. Per item, attempts of ONE `runPrompt` activity on the
 * shared GPU queue, which the first free ComfyUI of any worker takes: it uploads the inputs to that ComfyUI,
 * submits, follows, and stores the outputs as blobs (references with their mime: images, or videos for a
 * video kind).
 *
 * A single-item render is two workflow tasks (start → schedule the attempt; attempt done → complete) and
 * one activity hop. Payloads are small JSON (graphs and blob references); bytes never enter history.
 *
 * Prompt attempts are paced here, not by Temporal's activity retry policy: each attempt is its own
 * `runPrompt` activity (maximumAttempts 1), so history shows every attempt with its own failure, and the
 * attempt number in the deterministic prompt id is the workflow's count. The backend of each attempt (from
 * its result, its failure, or the last heartbeat of one that timed out) goes to the next attempt, which
 * looks there for the prompt an earlier attempt may have left running before it renders anew, and to
 * `stopPrompts` when the render ends with a prompt possibly still running.
 *
 * Priority: the render's Temporal priority (set when the submitter starts it) is inherited by its
 * activities, so the shared GPU queue hands out more urgent prompts first, first-in-first-out within a key.
 *
 * Webhook: a render whose input names one (`built.webhook`) starts a `webhook` child workflow when it ends,
 * completed, failed or cancelled, and ends without waiting for the delivery (webhook.ts), behind the patch
 * `webhook-delivery`.
 *
 * Changing what this code schedules breaks renders already running: see docs/versioning.md.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowCancellationType,
  ParentClosePolicy,
  TemporalFailure,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { BuiltRender, RenderActivities, RunPromptInput } from '../contracts/activities.ts';
import { webhookEvent, webhookIdFor } from './webhook-event.ts';
import type { WebhookTarget } from '../contracts/webhooks.ts';
import { webhook } from './webhook.ts';
import type { BlobRef, PromptRun, RenderItem, RenderRequest, RenderResult, StageTiming } from '../contracts/render.ts';
import { outcomeTags } from '../contracts/outcome.ts';
import { RENDER_BACKEND, RENDER_OUTCOME } from '../contracts/search-attributes.ts';
import { outcomeReason } from './failure-class.ts';
import { attemptBackoffMs } from '../contracts/attempts.ts';
import { GaveUpFailureType, NON_RETRYABLE_TYPES, NotDispatchedFailureType } from '../contracts/failures.ts';
import { gpuTaskQueue } from '../contracts/task-queues.ts';
import { describeFailure } from './failure-summary.ts';
import { interruptSignal, renderStatusQuery, skipSignal, type RenderStatus, type RenderWorkflow } from '../contracts/workflows.ts';

/**
 * Renders started with this code tag themselves with what happened (search attribute RenderOutcome, one
 * upsert as they end); renders started before it replay without (docs/versioning.md).
 */
export const OUTCOME_PATCH = 'render-outcome-search-attribute';

/** How long an attempt may wait for a GPU slot before it counts as failed (queue unserved). */
const GPU_QUEUE_WAIT_MS = 60 * 60_000;

const io = proxyActivities<RenderActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8, nonRetryableErrorTypes: NON_RETRYABLE_TYPES },
});

/**
 * Attempts handed back undispatched by a worker's lookahead (backends/gpu-pool.ts) are sent again without
 * counting; renders recorded before it never saw such a failure.
 */
export const NOT_DISPATCHED_PATCH = 'not-dispatched-attempts';

/**
 * The patch that added webhooks (docs/versioning.md): a render with a webhook records its marker when it ends,
 * and renders recorded before it (none of which had a webhook) replay unchanged.
 */
export const WEBHOOK_PATCH = 'webhook-delivery';

export async function render(request: RenderRequest, built: BuiltRender): Promise<RenderResult> {
  const target = built.webhook;
  if (!target) return renderItems(request, built);
  let result: RenderResult;
  try {
    result = await renderItems(request, built);
  } catch (err) {
    // Only a Temporal failure ends the workflow; any other error fails the workflow task, which is retried.
    if (err instanceof TemporalFailure) await announce(request, target, { error: failureOf(err) });
    throw err;
  }
  await announce(request, target, { outputs: result.outputs });
  return result;
}

/** Held to the signature the front starts it by (src/contracts/workflows.ts): a change to either fails the type check. */
const _renderHeldToItsContract: RenderWorkflow = render;

/**
 * Hands the render's event to a `webhook` child workflow (webhook.ts) and ends without waiting for it: the
 * child is abandoned, so the result, the GPU lease and admission never wait on a receiver. Runs even when the
 * render was cancelled (the client learns it failed). Resolves once the child has started, so the delivery is
 * durable before the render's end is.
 */
async function announce(request: RenderRequest, target: WebhookTarget, end: { outputs?: BlobRef[]; error?: { type: string; message: string } }): Promise<void> {
  if (!patched(WEBHOOK_PATCH)) return;
  const { workflowId: renderId, runId } = workflowInfo();
  const { type, body } = webhookEvent(target, { renderId, runId, model: request.model, kind: request.kind, endedAtMs: Date.now(), ...end });
  const webhookId = webhookIdFor(runId);
  await CancellationScope.nonCancellable(() =>
    startChild(webhook, {
      workflowId: `webhook-${renderId}-${webhookId.slice('msg_'.length)}`,
      args: [{ renderId, webhookId, url: target.url, type, body, limits: target.limits }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      cancellationType: ChildWorkflowCancellationType.ABANDON,
      memo: { renderId, type },
    }),
  );
}

/** What a failed render's event says: the failure type the front reports, and the message of what failed. */
function failureOf(err: TemporalFailure): { type: string; message: string } {
  let e: Error = err;
  // An activity failure's own message is generic ("Activity task failed"): its cause says what went wrong.
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  return { type: outcomeReason(err), message: e.message };
}

// eslint-disable-next-line max-lines-per-function -- workflow code: the order of its commands is what recorded histories replay (test/histories); kept whole so a refactor cannot reorder them
async function renderItems(request: RenderRequest, built: BuiltRender): Promise<RenderResult> {
  const status: RenderStatus = { stage: 'waiting', item: 0, items: request.batchSize * request.nIter, promptIds: [], attempts: [] };
  setHandler(renderStatusQuery, () => status);
  const renderId = workflowInfo().workflowId;
  const gpuQueue = gpuTaskQueue(workflowInfo().taskQueue);
  const timings: StageTiming[] = [];
  const timed = async <T>(stage: string, fn: () => Promise<T>): Promise<T> => {
    const start = Date.now();
    try {
      return await fn();
    } finally {
      timings.push({ stage, ms: Date.now() - start });
    }
  };

  /** The running item's scope: interrupt and skip cancel it (runPrompt then stops its prompt in ComfyUI). */
  let itemScope: CancellationScope | undefined;
  // Reset as each item starts; the skip signal sets it while that item runs.
  let skipCurrent: boolean;
  setHandler(interruptSignal, () => {
    status.interrupted = true;
    itemScope?.cancel();
  });
  setHandler(skipSignal, () => {
    if (!itemScope) return;
    skipCurrent = true;
    itemScope.cancel();
  });

  const { plan, limits } = built;

  /** The item whose attempts may have left a prompt running in ComfyUI: its attempts and their backends. */
  const started = { item: -1, attempts: 0, backends: [] as string[] };

  const runItem = async (item: RenderItem): Promise<PromptRun> => {
    let deadline = Date.now() + limits.deadlineMs;
    const backends: string[] = [];
    started.item = item.index;
    started.backends = backends;
    for (let attempt = 1; ; attempt++) {
      started.attempts = attempt;
      status.stage = 'waiting';
      const gpu = proxyActivities<RenderActivities>({
        taskQueue: gpuQueue,
        startToCloseTimeout: Math.max(limits.minAttemptMs, deadline - Date.now()),
        // No worker serves the GPU queue (none running, or GPU_BACKENDS lists none): fail, not wait forever.
        scheduleToStartTimeout: GPU_QUEUE_WAIT_MS,
        heartbeatTimeout: limits.heartbeatTimeoutMs,
        retry: { maximumAttempts: 1 },
        // A cancelled render ends only once runPrompt has stopped its prompt in ComfyUI. Spelled out: the
        // SDK documents this as the default, but an unset option reaches Core as 0 = TRY_CANCEL, which
        // ends the workflow at once while the GPU keeps rendering.
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      });
      const input: RunPromptInput = {
        renderId,
        item: item.index,
        attempt,
        graph: item.graph,
        stallTimeoutMs: limits.stallTimeoutMs,
        model: request.model,
        request,
      };
      // Only LoadImage graphs need them: uploaded to whichever ComfyUI runs the attempt.
      if (plan.uploads.length > 0) input.uploads = plan.uploads;
      if (attempt > 1) input.previousBackends = [...backends];
      const scheduledAt = Date.now();
      try {
        const run = await gpu.runPrompt(input);
        backends[attempt - 1] = run.backend;
        status.attempts.push({ item: item.index, attempt, outcome: 'completed', promptId: run.promptId, backend: run.backend });
        return run;
      } catch (err) {
        // The render itself was cancelled: runPrompt has stopped the prompt; end as cancelled.
        if (CancellationScope.current().consideredCancelled) throw err;
        const f = describeFailure(err);
        if (f.type === NotDispatchedFailureType && patched(NOT_DISPATCHED_PATCH)) {
          // Handed back by its worker before any ComfyUI was free: no prompt was sent. Not an attempt, and, as a
          // wait in the shared queue, its time does not count against the item's deadline.
          deadline += Date.now() - scheduledAt;
          attempt--;
          continue;
        }
        backends[attempt - 1] = f.backend ?? '';
        status.attempts.push({ item: item.index, attempt, outcome: 'failed', type: f.type, message: f.message, ...(f.backend ? { backend: f.backend } : {}) });
        if (!f.retryable) throw err;
        const delay = f.retryAfterMs ?? attemptBackoffMs(attempt, limits.backoffInitialMs, limits.backoffMaxMs);
        const outOfTime = Date.now() + delay + limits.minAttemptMs > deadline;
        if (attempt >= limits.maxAttempts || outOfTime) {
          const why = outOfTime ? `its ${Math.round(limits.deadlineMs / 1000)} s deadline` : `${attempt} attempts`;
          throw ApplicationFailure.create({
            type: GaveUpFailureType,
            message: `item ${item.index} did not render within ${why}; last attempt: ${f.type}: ${f.message}`,
            nonRetryable: true,
            details: [{ item: item.index, attempts: status.attempts.filter((a) => a.item === item.index) }],
            cause: err instanceof Error ? err : undefined,
          });
        }
        await sleep(delay);
      }
    }
  };

  const outputs: BlobRef[] = [];
  /** A `prompt` render's outputs per node (its one item's), for answers in ComfyUI's shape. */
  let ui: PromptRun['ui'];
  const rendered: RenderItem[] = [];
  const used: string[] = [];
  try {
    for (const item of plan.items) {
      if (status.interrupted) break;
      status.item = item.index;
      const scope = new CancellationScope();
      itemScope = scope;
      skipCurrent = false;
      let run: PromptRun;
      try {
        run = await scope.run(() => timed(`runPrompt[${item.index}]`, () => runItem(item)));
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
      // A stopped prompt answers with its partial image (runPrompt): kept for interrupt and skip, not when
      // the whole render was cancelled.
      if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('render cancelled');
      if (run.partial) {
        (status.partial ??= []).push({ item: item.index, ...run.partial });
        if (skipCurrent) (status.skipped ??= []).push(item.index);
      }
      status.promptIds.push(run.promptId);
      if (run.backend) {
        status.backend = run.backend;
        if (!used.includes(run.backend)) used.push(run.backend);
      }
      for (const t of run.timings) timings.push({ stage: `${t.stage}[${item.index}]`, ms: t.ms });
      // A client's own graph may answer with text only (PreviewAny): ComfyUI's outputs are then its result.
      if (run.ui) ui = run.ui;
      if (run.outputs.length === 0 && !(request.kind === 'prompt' && ui && Object.keys(ui).length > 0)) {
        throw ApplicationFailure.nonRetryable(`prompt ${run.promptId} produced no outputs`, 'NoOutputs');
      }
      outputs.push(...run.outputs);
      rendered.push(item);
    }
  } catch (err) {
    // Cancelled, or out of attempts or time: an attempt that timed out or was handed back by a stopping
    // worker left its prompt running for a re-attach that will now never come. Stop it, even though this
    // workflow is being cancelled, so the GPU is free for the next render.
    // (A ComfyUI failure that ended the render — validation, a node exception — left nothing running.)
    const mayBeLive = CancellationScope.current().consideredCancelled || (err instanceof ApplicationFailure && err.type === GaveUpFailureType);
    if (started.attempts > 0 && mayBeLive) {
      const { item, attempts, backends } = started;
      await CancellationScope.nonCancellable(() => io.stopPrompts({ attemptBackends: [...backends], item, attempts }));
    }
    // A cancel that arrives together with a failed attempt (a worker handed its attempt back just as the render
    // was cancelled) surfaces as that activity's failure: end the render as cancelled all the same.
    if (CancellationScope.current().consideredCancelled && !(err instanceof CancelledFailure)) {
      throw new CancelledFailure('render cancelled', [], err instanceof Error ? err : undefined);
    }
    // A failure, findable by its class (a cancelled render's status says it all).
    if (!CancellationScope.current().consideredCancelled && patched(OUTCOME_PATCH)) {
      upsertSearchAttributes([{ key: RENDER_OUTCOME, value: ['failed', `failed:${outcomeReason(err)}`] }]);
    }
    throw err;
  }
  status.stage = 'done';
  const stopped = {
    ...(status.interrupted ? { interrupted: true } : {}),
    ...(status.skipped && status.skipped.length > 0 ? { skipped: status.skipped } : {}),
    ...(status.partial && status.partial.length > 0 ? { partial: status.partial } : {}),
  };
  // Searchable by backend (several when a batch's items ran on different GPUs) and by what happened.
  const backendAttribute = used.length > 0 ? [{ key: RENDER_BACKEND, value: used.join(',') }] : [];
  if (patched(OUTCOME_PATCH)) upsertSearchAttributes([...backendAttribute, { key: RENDER_OUTCOME, value: outcomeTags({ outputs, ...stopped }) }]);
  else if (backendAttribute.length > 0) upsertSearchAttributes(backendAttribute);

  return {
    renderId,
    outputs,
    seeds: rendered.map((i) => i.seed),
    ...stopped,
    request,
    ...(ui ? { ui } : {}),
    backend: used.join(','),
    promptIds: status.promptIds,
    timings,
  };
}
