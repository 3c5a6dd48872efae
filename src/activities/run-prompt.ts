/**
 * `runPrompt`: submit one graph to ComfyUI and follow it to completion, heartbeating progress.
 *
 * Bound late: the attempt runs on the free ComfyUI this worker hands it (backends/gpu-pool.ts); it uploads the
 * render's inputs there, submits, follows, and stores the outputs (reattach.ts, collect-outputs.ts).
 *
 * Idempotency: the prompt id is derived from (workflow, run, item, attempt). An attempt first looks for the
 * prompts earlier attempts submitted — by re-deriving their ids, which also covers a crash between submit
 * and the first heartbeat — on the backend each ran on (or every backend, when unknown), and re-attaches to
 * one that is still pending, running or finished, there, instead of rendering again. Only when none is
 * alive does it submit a new prompt.
 *
 * Failure handling (docs/durability.md):
 * - stall (no event, no queue movement for stallTimeout): cancel the prompt (jobs cancel, or dequeue +
 *   targeted interrupt); if it keeps running, `/free`; if it still runs, mark the backend unhealthy.
 * - cancellation of the render: cancel the prompt and wait until it stopped, so the workflow ends only when
 *   the GPU is free. Any other reason the activity is told to stop (worker shutdown, attempt timed out on
 *   the server) leaves the prompt running: the next attempt re-attaches to it, so nothing renders twice.
 *   Except a shutdown of a model-swapping proxy's GPU entry (`stopPromptOnShutdown`): the GPU goes to another
 *   group when it exits, so the prompt is stopped and the next attempt renders it afresh.
 * - ComfyUI lost an uploaded input (restarted on a fresh input folder): upload again, submit once more.
 * - out of memory: `/free` before the failure, so the retry finds VRAM and caches cleared.
 */
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ComfyExecutionError, ComfyStallError, ComfyUnavailableError, ComfyValidationError } from '../comfyui/errors.ts';
import { followPrompt } from '../comfyui/follow.ts';
import type { FollowProgress, FollowResult } from '../comfyui/follow-types.ts';
import { submitAndFollow } from '../comfyui/submit-and-follow.ts';
import { attemptPromptId } from './prompt-ids.ts';
import { validateBeforeSubmit } from './presubmit.ts';
import { findLivePrompt, previousPrompts, queuedClientId } from './reattach.ts';
import { STOP_OUTCOME_TEXT, cancelAndWait, stopStalledPrompt } from './stop-prompt.ts';
import type { ComfyClient } from '../comfyui/client.ts';
import type { Logger } from '../log.ts';
import { inputReuploads, promptAttempts, promptReattached, promptStalls } from '../metrics/metrics.ts';
import type { Backend, PromptRun, RenderRequest, StageTiming } from '../render/types.ts';
import { hasPartialImage, storePartialImage } from './partial-output.ts';
import { ItemProgress } from './item-progress.ts';
import { StageRates } from './stage-rates.ts';
import { silentStagePriors } from '../models/stage-priors.ts';
import { NotDispatchedError, type GpuPool, type Lease } from '../backends/gpu-pool.ts';
import { DEFAULT_PRIORITY } from '../renders/priority.ts';
import { NotDispatchedFailureType } from '../workflows/failure-types.ts';
import { collectFiles, collectPromptOutputs } from './collect-outputs.ts';
import { toFailure, withBackend } from './failures.ts';
import { ObjectInfoCache } from './object-info-cache.ts';
import type { PromptHeartbeat, RenderActivities, RunPromptInput } from './types.ts';
import { uploadAll } from './upload-inputs.ts';
import { clearPreview, previewsWanted, writePreview } from '../operators/previews.ts';
import { clientFor, type ActivityDeps } from './deps.ts';
import { cancelReason, outcomeLabel } from './attempt-outcome.ts';
import { deadBackendMs, ensureBackendUsable, waitReachable } from './backend-readiness.ts';
import { inSpan, inSpanPair } from '../tracing/spans.ts';
import { SpanKind } from '@opentelemetry/api';

/** Heartbeat tick. The SDK throttles the RPCs (worker.ts sets the cap), so ticking often costs nothing and
 *  lets a cancellation, which arrives only in a heartbeat response, reach us within seconds. */
const HEARTBEAT_TICK_MS = 1_000;
/** Live previews are written at most this often (a client polls progress about once a second). */
const PREVIEW_MIN_INTERVAL_MS = 250;

/** How long to wait for an interrupt (and then `/free`) to stop a prompt before escalating. */
export function stopGraceMs(stallTimeoutMs: number): number {
  return Math.min(15_000, Math.max(1_000, Math.floor(stallTimeoutMs / 4)));
}

/** An attempt that found its backend unhealthy is retried soon, on another worker's backend. */
const UNHEALTHY_RETRY_MS = 1_000;
/** After a backend refused connections, the next attempt (on another backend) starts this soon. */
const DEAD_BACKEND_RETRY_MS = 1_000;

export function createRunPrompt(deps: ActivityDeps, pool: GpuPool): RenderActivities['runPrompt'] {
  const objectInfo = new ObjectInfoCache();
  // What text encoding and decode took on earlier renders of each model: the next one's progress estimate.
  const rates = new StageRates(path.join(deps.config.dataDir, 'stage-rates.json'));

  return async (input: RunPromptInput): Promise<PromptRun> => {
    // Bound late: the backend is whichever free ComfyUI this worker has now (preferring one that last ran the model).
    const lease = await acquireBackend(pool, input, deps.logger);
    let ranModel: string | undefined;
    try {
      const run = await runAttempt(deps, objectInfo, rates, lease.backend, input);
      ranModel = input.model;
      return run;
    } finally {
      lease.release(ranModel);
    }
  };
}

/**
 * Wait for this worker's dispatch to hand the attempt a backend (backends/gpu-pool.ts), heartbeating meanwhile.
 * Handed back unstarted (the worker stops, or none of its backends is healthy): a NotDispatched failure, which
 * the workflow sends again without counting an attempt, since no prompt was sent.
 */
async function acquireBackend(pool: GpuPool, input: RunPromptInput, logger: Logger): Promise<Lease> {
  const ctx = Context.current();
  const signal = ctx.cancellationSignal;
  const position = input.request ? { item: input.item, items: input.request.batchSize * input.request.nIter } : {};
  const waiting: PromptHeartbeat = { backend: '', promptId: '', lastEventAt: Date.now(), attempt: input.attempt, queued: true, ...position };
  const ticker = setInterval(() => ctx.heartbeat(waiting), HEARTBEAT_TICK_MS);
  try {
    const granted = pool.acquire({ model: input.model, priority: ctx.info.priority?.priorityKey ?? DEFAULT_PRIORITY }, signal);
    if (pool.queued() > 0)
      logger.info(
        { renderId: input.renderId, item: input.item, model: input.model, queued: pool.queued() },
        'prompt attempt waits in this worker for a ComfyUI',
      );
    return await granted;
  } catch (err) {
    const shutdown = cancelReason(err) === 'WORKER_SHUTDOWN';
    if (err instanceof NotDispatchedError || shutdown) {
      throw ApplicationFailure.create({
        type: NotDispatchedFailureType,
        message: shutdown ? 'the worker stopped before a ComfyUI was free for this attempt' : err instanceof Error ? err.message : String(err),
      });
    }
    throw err;
  } finally {
    clearInterval(ticker);
  }
}

// eslint-disable-next-line max-lines-per-function -- the attempt's phases (reach, re-attach or submit, follow, collect) share its mutable state (backend, client, prompt id, heartbeat, submit flags) that the failure paths below read to decide what to stop; splitting it by phase is issue 26's open item
async function runAttempt(deps: ActivityDeps, objectInfo: ObjectInfoCache, rates: StageRates, leased: Backend, input: RunPromptInput): Promise<PromptRun> {
  const ctx = Context.current();
  const { attempt } = input;
  const workflowExecution = ctx.info.workflowExecution ?? { workflowId: input.renderId, runId: '' };
  let backend = leased;
  let client = clientFor(deps, backend);
  let log = deps.logger.child({ renderId: input.renderId, item: input.item, attempt, backend: backend.id });
  const signal = ctx.cancellationSignal;
  const startedAt = Date.now();
  const graceMs = stopGraceMs(input.stallTimeoutMs);
  const timings: StageTiming[] = [];

  // Where the item sits in its render, so every progress route reads the render's progress from the heartbeat alone.
  const position = input.request ? { item: input.item, items: input.request.batchSize * input.request.nIter } : {};
  let beat: PromptHeartbeat = { backend: backend.id, promptId: '', lastEventAt: startedAt, attempt, ...position };
  const stages = new ItemProgress(
    input.graph,
    input.request?.kind === 'video',
    input.request ? rates.estimate(input.request, silentStagePriors(input.request.model)) : {},
  );
  const onProgress = (p: FollowProgress): void => {
    beat = { backend: backend.id, promptId: p.promptId, lastEventAt: p.lastEventAt ?? p.lastActivityAt, attempt, ...position };
    if (p.node !== undefined) beat.node = p.node;
    if (p.value !== undefined) beat.value = p.value;
    if (p.max !== undefined) beat.max = p.max;
    Object.assign(beat, stages.update(p.node, p.value, p.max, Date.now()));
    ctx.heartbeat(beat);
  };
  // The first heartbeat names the backend at once: if this worker dies, the next attempt knows where to look.
  ctx.heartbeat(beat);
  // Silent stretches (a model loading, the escalation below) still need heartbeats, or Temporal would
  // think the worker died.
  const ticker = setInterval(() => {
    if (beat.phase !== undefined) Object.assign(beat, stages.tick(Date.now()));
    ctx.heartbeat(beat);
  }, HEARTBEAT_TICK_MS);
  // Live previews for /sdapi/v1/progress, at most a few per second, only when a client watches.
  const wantPreviews = previewsWanted(deps.config.dataDir);
  // The last preview is also what an interrupted or skipped item answers with (partial-output.ts), so image
  // renders always ask for previews.
  const keepPartial = hasPartialImage(input.request);
  let lastPreview: Buffer | undefined;
  let lastPreviewAt = 0;
  const onPreview = (image: Buffer): void => {
    if (keepPartial) lastPreview = Buffer.from(image);
    if (!wantPreviews) return;
    const now = Date.now();
    if (now - lastPreviewAt < PREVIEW_MIN_INTERVAL_MS) return;
    lastPreviewAt = now;
    try {
      writePreview(deps.config.dataDir, input.renderId, image);
    } catch (err) {
      log.debug({ err: (err as Error).message }, 'could not write preview');
    }
  };
  const follow = {
    signal,
    stallTimeoutMs: input.stallTimeoutMs,
    refusedDeadMs: deadBackendMs(input.stallTimeoutMs),
    pollIntervalMs: deps.config.POLL_INTERVAL_MS,
    onProgress,
    ...(wantPreviews || keepPartial ? { onPreview } : {}),
    logger: log,
  };

  let promptId = '';
  // `POST /prompt` sent; ComfyUI answered it (or the prompt is an earlier attempt's, found queued or running).
  let submitSent = false;
  let submitConfirmed = false;
  try {
    // ComfyUI coming back from a restart (tens of seconds with custom nodes) is waited for, within the
    // stall budget, instead of burning the item's attempts on connection errors.
    // A backend marked unhealthy fails the attempt at once (before waiting for it to answer). The next
    // attempt goes to another worker's ComfyUI soon: this worker asks for no work while its only backends
    // are unhealthy (backends/gpu-pool.ts).
    await ensureBackendUsable(deps.health, backend, client, UNHEALTHY_RETRY_MS);
    await waitReachable(client, input.stallTimeoutMs, deadBackendMs(input.stallTimeoutMs), deps.config.POLL_INTERVAL_MS, signal);

    const previous = await findLivePrompt(deps, backend, previousPrompts(workflowExecution, input), signal);
    let result: FollowResult;
    const promptStart = Date.now();
    if (previous) {
      promptId = previous.promptId;
      submitConfirmed = true;
      if (previous.backend.id !== backend.id) {
        // An earlier attempt's prompt lives on another ComfyUI (its worker died or handed it back): follow
        // it there rather than render it twice; its outputs are collected from there too.
        backend = previous.backend;
        client = clientFor(deps, backend);
        log = log.child({ backend: backend.id, leased: leased.id });
      }
      log.info({ promptId }, 're-attaching to the prompt an earlier attempt submitted');
      const attrs = { 'comfyui.backend': backend.id, 'comfyui.prompt_id': promptId, 'comfyui.reattached': true };
      promptReattached.inc({ backend: backend.id });
      beat = { ...beat, backend: backend.id, promptId };
      ctx.heartbeat(beat);
      // The prompt's events go to the socket of the attempt that submitted it, which has ended: reclaim
      // that client id, or a long remaining render would look stalled for want of progress events.
      const ownerClientId = await queuedClientId(client, promptId, signal);
      result = await inSpan('comfyui.follow', attrs, () => followPrompt(client, { ...follow, promptId, ...(ownerClientId ? { ownerClientId } : {}) }));
    } else {
      promptId = attemptPromptId(workflowExecution, input.item, attempt);
      if (input.uploads && input.uploads.length > 0) {
        // Inputs go to the backend that runs the prompt, now that it is known.
        const t0 = Date.now();
        const uploads = input.uploads;
        await inSpan('comfyui.upload', { 'comfyui.backend': backend.id, 'comfyui.files': uploads.length }, () => uploadAll(deps, backend, uploads));
        timings.push({ stage: 'uploadInputs', ms: Date.now() - t0 });
      }
      await validateBeforeSubmit(client, { graph: input.graph, backend }, objectInfo);
      // Two sibling spans: the submission (`POST /prompt`, or finding it already queued) up to onSubmitted,
      // then following the prompt to its end.
      const attrs = { 'comfyui.backend': backend.id, 'comfyui.prompt_id': promptId };
      const submitSpan = {
        name: 'comfyui.submit',
        kind: SpanKind.CLIENT,
        attributes: { ...attrs, 'http.request.method': 'POST', 'url.path': '/prompt', 'server.address': backend.url },
      };
      submitSent = true;
      result = await inSpanPair(submitSpan, { name: 'comfyui.follow', attributes: attrs }, (submitted) =>
        submitWithReupload(deps, client, backend, input, objectInfo, log, {
          ...follow,
          graph: input.graph,
          promptId,
          extraData: {
            comfy_durable: { render_id: input.renderId, item: input.item, attempt },
            ...(wantPreviews || keepPartial ? { preview_method: 'auto' } : {}),
          },
          // Stopping the prompt is decided here (it depends on why we stop), not in submitAndFollow.
          cancelOnAbortOrStall: false,
          onSubmitted: ({ reattached }) => {
            submitConfirmed = true;
            beat = { ...beat, promptId };
            ctx.heartbeat(beat);
            log.info({ promptId, reattached }, 'prompt submitted');
            submitted({ 'comfyui.reattached': reattached });
          },
        }),
      );
    }
    timings.push({ stage: 'prompt', ms: Date.now() - promptStart });
    // A prompt followed from its start measured its silent stages: the next render of the model estimates from them.
    if (input.request && !previous) rates.record(input.request, stages.measured(Date.now()));
    deps.health.markHealthy(backend, `prompt ${promptId} succeeded`);
    promptAttempts.inc({ backend: backend.id, outcome: 'success' });
    const files = result.files.map(({ filename, subfolder, type }) => ({ filename, subfolder, type }));
    const t0 = Date.now();
    const collectAttrs = { 'comfyui.backend': backend.id, 'comfyui.prompt_id': promptId, 'comfyui.files': files.length };
    // A client's own graph keeps every file it reported, per node (its answers are in ComfyUI's shape).
    const collected =
      input.request.kind === 'prompt'
        ? await inSpan('comfyui.collect', collectAttrs, () => collectPromptOutputs(deps, client, result.outputs))
        : { refs: await inSpan('comfyui.collect', collectAttrs, () => collectFiles(deps, client, files, input.request, input.item)), ui: undefined };
    const outputs = collected.refs;
    timings.push({ stage: 'collectOutputs', ms: Date.now() - t0 });
    const run: PromptRun = {
      promptId,
      attempt,
      files,
      startedAt: result.startedAt ?? startedAt,
      finishedAt: result.finishedAt ?? Date.now(),
      backend: backend.id,
      outputs,
      timings,
      ...(collected.ui ? { ui: collected.ui } : {}),
    };
    const blank = outputs.filter((o) => o.blank);
    if (blank.length > 0)
      log.warn({ promptId, blank: blank.map((o) => o.blank) }, 'output image of one colour (a black one: NaNs in the VAE): flagged in the result');
    return run;
  } catch (err) {
    if (signal.aborted) {
      const reason = cancelReason(signal.reason);
      promptAttempts.inc({
        backend: backend.id,
        outcome: reason === 'CANCELLED' ? 'cancelled' : reason === 'WORKER_SHUTDOWN' ? 'worker_shutdown' : 'abandoned',
      });
      if (reason === 'CANCELLED' && promptId !== '') {
        // The render was cancelled: stop the GPU before the workflow is allowed to end.
        const stopped = await cancelAndWait(client, promptId, graceMs, log);
        log.info({ promptId, stopped }, 'render cancelled: prompt cancelled in ComfyUI');
        // Interrupt and skip keep what was rendered: the workflow takes this result for the stopped item
        // (and ends as cancelled when the whole render was).
        if (lastPreview && hasPartialImage(input.request)) {
          const partial = await partialRun(deps, lastPreview, input.request, input.item, {
            promptId,
            attempt,
            startedAt,
            backend: backend.id,
            timings,
            beat,
          }).catch((e: unknown) => {
            log.warn({ promptId, err: (e as Error).message }, 'could not keep the partial image of the stopped prompt');
            return undefined;
          });
          if (partial) return partial;
        }
      } else if (reason === 'WORKER_SHUTDOWN' && deps.stopPromptOnShutdown) {
        // The proxy is taking the GPU away and gives it on once this process exits: no prompt may outlive it on
        // this ComfyUI. A submission whose answer never came may still be queued after the cancel (waited for);
        // stopped while looking for an earlier attempt's prompt, every earlier attempt's is stopped here.
        // The next attempt finds them interrupted and renders the item afresh: one complete render, nothing lost.
        const targets = promptId ? [promptId] : previousPrompts(workflowExecution, input).map((p) => p.promptId);
        for (const target of targets) {
          const stopped = await cancelAndWait(client, target, graceMs, log, { mayStillArrive: submitSent && !submitConfirmed });
          log.warn({ promptId: target, stopped }, 'GPU handed away mid-prompt: prompt stopped in ComfyUI; the next attempt renders it again');
        }
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
        details: [{ ...err.details(), stop, backend: backend.id }],
      });
    }
    if (err instanceof ComfyUnavailableError && err.refusedForMs !== undefined) {
      // Its process is gone: no new attempt may lease it until it answers again (the worker's probe clears
      // the mark), so the next attempt, soon, runs on another GPU. Its queue died with it: nothing renders twice.
      deps.health.markUnhealthy(backend, { reason: `refuses connections (${err.message})`, ...(promptId ? { abandonedPromptId: promptId } : {}) });
      log.warn({ promptId, refusedForMs: err.refusedForMs }, 'ComfyUI refuses connections: moving the item to another backend');
      throw ApplicationFailure.create({
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
    throw withBackend(toFailure(err), backend.id);
  } finally {
    clearInterval(ticker);
    if (wantPreviews) clearPreview(deps.config.dataDir, input.renderId);
  }
}

/** The stopped prompt's result: its last preview as the item's image, marked partial. */
async function partialRun(
  deps: ActivityDeps,
  preview: Buffer,
  request: RenderRequest,
  item: number,
  at: { promptId: string; attempt: number; startedAt: number; backend: string; timings: StageTiming[]; beat: PromptHeartbeat },
): Promise<PromptRun> {
  const ref = await storePartialImage(deps.blobs, preview, request, item);
  const { beat } = at;
  return {
    promptId: at.promptId,
    attempt: at.attempt,
    files: [],
    startedAt: at.startedAt,
    finishedAt: Date.now(),
    outputs: [ref],
    backend: at.backend,
    timings: at.timings,
    partial: { ...(beat.value !== undefined ? { step: beat.value } : {}), ...(beat.max !== undefined ? { steps: beat.max } : {}) },
  };
}

/**
 * Submit; when ComfyUI says a LoadImage file is missing (HTTP 400, nothing queued), upload the render's
 * inputs again and submit once more with the same prompt id.
 */
async function submitWithReupload(
  deps: ActivityDeps,
  client: ComfyClient,
  backend: Backend,
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
      inputReuploads.inc({ backend: backend.id });
      await uploadAll(deps, backend, uploads);
      objectInfo.invalidate(backend.id);
    }
  }
}
