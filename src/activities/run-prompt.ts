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
 *   the server) leaves the prompt running: the next attempt re-attaches to it, so nothing renders twice; the
 *   backend stays busy in this worker's pool until the prompt has left ComfyUI's queue (late binding: a
 *   ComfyUI only gets a prompt when it is free).
 *   Except a shutdown of a model-swapping proxy's GPU entry (`stopPromptOnShutdown`): the GPU goes to another
 *   group when it exits, so the prompt is stopped and the next attempt renders it afresh.
 * - ComfyUI lost an uploaded input (restarted on a fresh input folder): upload again, submit once more.
 * - out of memory: `/free` before the failure, so the retry finds VRAM and caches cleared.
 */
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { SpanKind } from '@opentelemetry/api';
import { ComfyUnavailableError, ComfyValidationError } from '../comfyui/errors.ts';
import { followPrompt } from '../comfyui/follow.ts';
import type { FollowOptions, FollowResult } from '../comfyui/follow-types.ts';
import { submitAndFollow, type SubmitAndFollowOptions } from '../comfyui/submit-and-follow.ts';
import type { Logger } from '../log.ts';
import { inputReuploads, promptAttempts, promptReattached } from '../metrics/metrics.ts';
import type { Backend, PromptRun } from '../contracts/render.ts';
import { silentStagePriors } from '../models/stage-priors.ts';
import { NotDispatchedError, type GpuPool, type Lease } from '../backends/gpu-pool.ts';
import { DEFAULT_PRIORITY } from '../contracts/priority.ts';
import { NotDispatchedFailureType } from '../contracts/failures.ts';
import { inSpan, inSpanPair } from '../tracing/spans.ts';
import { attemptFailure, attemptStopped } from './attempt-failure.ts';
import { cancelReason } from './attempt-outcome.ts';
import { AttemptHeartbeat, AttemptPreviews, HEARTBEAT_TICK_MS, itemPosition, targetOf, type Attempt, type Reached, type Target } from './attempt-state.ts';
import { deadBackendMs, ensureBackendUsable, waitReachable } from './backend-readiness.ts';
import { collectFiles, collectPromptOutputs } from './collect-outputs.ts';
import type { ActivityDeps } from './deps.ts';
import { ItemProgress } from './item-progress.ts';
import { ObjectInfoCache } from './object-info-cache.ts';
import { validateBeforeSubmit } from './presubmit.ts';
import { attemptPromptId } from './prompt-ids.ts';
import { findLivePrompt, previousPrompts, promptLeftQueue, queuedClientId } from './reattach.ts';
import { StageRates } from './stage-rates.ts';
import type { PromptHeartbeat, RenderActivities, RunPromptInput } from '../contracts/activities.ts';
import { uploadAll } from './upload-inputs.ts';

/** How long to wait for an interrupt (and then `/free`) to stop a prompt before escalating. */
export function stopGraceMs(stallTimeoutMs: number): number {
  return Math.min(15_000, Math.max(1_000, Math.floor(stallTimeoutMs / 4)));
}

/** An attempt that found its backend unhealthy is retried soon, on another worker's backend. */
const UNHEALTHY_RETRY_MS = 1_000;

export function createRunPrompt(deps: ActivityDeps, pool: GpuPool): RenderActivities['runPrompt'] {
  const objectInfo = new ObjectInfoCache();
  // What text encoding and decode took on earlier renders of each model: the next one's progress estimate.
  const rates = new StageRates(path.join(deps.config.dataDir, 'stage-rates.json'));

  return async (input: RunPromptInput): Promise<PromptRun> => {
    // Bound late: the backend is whichever free ComfyUI this worker has now (preferring one that last ran the model).
    const lease = await acquireBackend(pool, input, deps.logger);
    const ended: Ended = {};
    let ranModel: string | undefined;
    try {
      const run = await runAttempt(deps, objectInfo, rates, lease.backend, input, ended);
      ranModel = input.model;
      return run;
    } finally {
      if (ended.leftRunning) releaseWhenGone(lease, ended.leftRunning, input, deps.config.POLL_INTERVAL_MS);
      else lease.release(ranModel);
    }
  };
}

/** What the pool must know of how an attempt ended: the prompt it left running in ComfyUI, if any. */
interface Ended {
  leftRunning?: Attempt['leftRunning'];
}

/**
 * The attempt left its prompt running on its backend (told to stop by a server-side timeout or a shutdown): free
 * the backend (which loaded `model`) once that prompt has left ComfyUI's queue: until then this worker sends that ComfyUI
 * no other prompt and takes no other attempt from the shared queue for it. (A prompt left on another worker's
 * ComfyUI, followed from here after a re-attach, keeps that worker's backend busy, not this one.) At most for the
 * model's stall timeout: a prompt hung in ComfyUI is nobody's to follow while it holds the backend, and the next
 * attempt there (the render's own retry re-attaches to it) has the stall detection that stops it.
 */
function releaseWhenGone(lease: Lease, { target, promptId }: NonNullable<Ended['leftRunning']>, input: RunPromptInput, pollMs: number): void {
  if (target.backend.id !== lease.backend.id) return lease.release();
  const bound = AbortSignal.timeout(input.stallTimeoutMs);
  lease.releaseWhen(
    promptLeftQueue(target.client, promptId, Math.max(pollMs, 250), bound).then((left) =>
      left
        ? target.log.info({ promptId }, 'the prompt an ended attempt left running has left the queue: backend free')
        : target.log.warn(
            { promptId, afterMs: input.stallTimeoutMs },
            'the prompt an ended attempt left running is still queued after the stall timeout: backend free for the next attempt',
          ),
    ),
    input.model,
  );
}

/**
 * Wait for this worker's dispatch to hand the attempt a backend (backends/gpu-pool.ts), heartbeating meanwhile.
 * Handed back unstarted (the worker stops, or none of its backends is healthy): a NotDispatched failure, which
 * the workflow sends again without counting an attempt, since no prompt was sent.
 */
async function acquireBackend(pool: GpuPool, input: RunPromptInput, logger: Logger): Promise<Lease> {
  const ctx = Context.current();
  const signal = ctx.cancellationSignal;
  const waiting: PromptHeartbeat = { backend: '', promptId: '', lastEventAt: Date.now(), attempt: input.attempt, queued: true, ...itemPosition(input) };
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

/**
 * One attempt on the leased backend, by phase: reach the backend; re-attach to an earlier attempt's prompt or
 * upload, check and submit a new one; follow it; collect and store its outputs. Told to stop or failed, the
 * attempt stops what must not outlive it (attempt-failure.ts).
 */
async function runAttempt(
  deps: ActivityDeps,
  objectInfo: ObjectInfoCache,
  rates: StageRates,
  leased: Backend,
  input: RunPromptInput,
  ended: Ended,
): Promise<PromptRun> {
  const ctx = Context.current();
  const at: Attempt = {
    deps,
    input,
    execution: ctx.info.workflowExecution ?? { workflowId: input.renderId, runId: '' },
    signal: ctx.cancellationSignal,
    startedAt: Date.now(),
    graceMs: stopGraceMs(input.stallTimeoutMs),
    timings: [],
  };
  const log = deps.logger.child({ renderId: input.renderId, item: input.item, attempt: input.attempt, backend: leased.id });
  const reached: Reached = { target: targetOf(deps, leased, log), promptId: '', submitSent: false, submitConfirmed: false };
  const estimate = input.request ? rates.estimate(input.request, silentStagePriors(input.request.model)) : {};
  const heartbeat = new AttemptHeartbeat(ctx, new ItemProgress(input.graph, input.request?.kind === 'video', estimate), input, leased.id, at.startedAt);
  const previews = new AttemptPreviews(deps.config.dataDir, input, () => reached.target.log);
  try {
    const probed = await reachBackend(at, reached.target);
    const { result, reattached } = await renderReachable(at, reached, { heartbeat, previews, objectInfo }, probed);
    // A prompt followed from its start measured its silent stages: the next render of the model estimates from them.
    if (input.request && !reattached) rates.record(input.request, heartbeat.stages.measured(Date.now()));
    const { backend } = reached.target;
    deps.health.markHealthy(backend, `prompt ${reached.promptId} succeeded`);
    promptAttempts.inc({ backend: backend.id, outcome: 'success' });
    const run = await collectRun(at, reached, result);
    // Between prompts now: the next prompt's socket is opened off its submit's path.
    void reached.target.client.refillSocketAhead();
    return run;
  } catch (err) {
    if (at.signal.aborted) return await attemptStopped(at, reached, { beat: heartbeat.beat, previews }, err);
    throw await attemptFailure(at, reached, err);
  } finally {
    ended.leftRunning = at.leftRunning;
    heartbeat.stop();
    previews.clear();
  }
}

/**
 * ComfyUI coming back from a restart (tens of seconds with custom nodes) is waited for, within the stall
 * budget, instead of burning the item's attempts on connection errors. A backend marked unhealthy fails the
 * attempt at once (before waiting for it to answer). The next attempt goes to another worker's ComfyUI soon:
 * this worker asks for no work while its only backends are unhealthy (backends/gpu-pool.ts).
 * A backend that answered in the last RECENTLY_ANSWERED_MS is not asked first (a round trip of every render,
 * ~1 ms of each on this box, bench/README.md issue 25): should it have gone since, renderReachable waits for it then.
 * Resolves whether it was asked.
 */
async function reachBackend(at: Attempt, { backend, client }: Target): Promise<boolean> {
  const { deps } = at;
  await ensureBackendUsable(deps.health, backend, client, UNHEALTHY_RETRY_MS);
  if (client.answeredWithin(RECENTLY_ANSWERED_MS)) return false;
  await waitForBackend(at, client);
  return true;
}

/** Long enough to cover the gap between two renders of a busy GPU; a restart takes longer than this. */
const RECENTLY_ANSWERED_MS = 5_000;

function waitForBackend(at: Attempt, client: Target['client']): Promise<void> {
  const { deps, input } = at;
  return waitReachable(client, input.stallTimeoutMs, deadBackendMs(input.stallTimeoutMs), deps.config.POLL_INTERVAL_MS, at.signal);
}

/**
 * What the probe would have waited through: no answer at all, or a gateway's while ComfyUI behind it restarts.
 * An error ComfyUI itself answered (a 500 from `POST /prompt`) is the attempt's failure, probed or not.
 */
function unreachable(err: unknown): err is ComfyUnavailableError {
  return err instanceof ComfyUnavailableError && (err.status === undefined || err.status === 502 || err.status === 503 || err.status === 504);
}

/**
 * renderPrompt; when the backend was not asked first (reachBackend) and stops answering before it has the
 * prompt, it is waited for as reachBackend would have, and the prompt rendered from the start. Safe whatever
 * the failed request was: a submit looks its prompt id up before it posts, so nothing renders twice.
 */
async function renderReachable(at: Attempt, reached: Reached, followers: Followers, probed: boolean): Promise<Rendered> {
  try {
    return await renderPrompt(at, reached, followers);
  } catch (err) {
    if (probed || reached.submitConfirmed || at.signal.aborted || !unreachable(err)) throw err;
    reached.target.log.info({ err: err.message }, 'ComfyUI stopped answering since its last render: waiting for it');
    await waitForBackend(at, reached.target.client);
    return await renderPrompt(at, reached, followers);
  }
}

/** What following the prompt reports to: the heartbeat and the previews, and the presubmit check's cache. */
interface Followers {
  heartbeat: AttemptHeartbeat;
  previews: AttemptPreviews;
  objectInfo: ObjectInfoCache;
}

/** The prompt's result in ComfyUI, and whether it was an earlier attempt's (followed from the middle). */
interface Rendered {
  result: FollowResult;
  reattached: boolean;
}

/**
 * Follow the prompt an earlier attempt left alive, or submit a new one: never both, so nothing renders twice.
 * Timed from the choice to the prompt's end (the `prompt` stage).
 */
async function renderPrompt(at: Attempt, reached: Reached, followers: Followers): Promise<Rendered> {
  const previous = await findLivePrompt(at.deps, reached.target.backend, previousPrompts(at.execution, at.input), at.signal);
  const promptStart = Date.now();
  const result = previous ? await reattach(at, reached, previous, followers) : await submitNew(at, reached, followers);
  at.timings.push({ stage: 'prompt', ms: Date.now() - promptStart });
  return { result, reattached: previous !== undefined };
}

/** How the prompt is followed, whichever way it was found: options shared by re-attach and submission. */
function followOptions(at: Attempt, target: Target, { heartbeat, previews }: Followers): Omit<FollowOptions, 'promptId'> {
  return {
    signal: at.signal,
    stallTimeoutMs: at.input.stallTimeoutMs,
    refusedDeadMs: deadBackendMs(at.input.stallTimeoutMs),
    pollIntervalMs: at.deps.config.POLL_INTERVAL_MS,
    onProgress: heartbeat.onProgress,
    ...(previews.wanted() ? { onPreview: previews.onPreview } : {}),
    logger: target.log,
  };
}

/**
 * Follow an earlier attempt's prompt, found pending, running or finished. It may live on another ComfyUI (its
 * worker died or handed it back): it is followed there, and its outputs are collected from there too.
 */
async function reattach(at: Attempt, reached: Reached, previous: { promptId: string; backend: Backend }, followers: Followers): Promise<FollowResult> {
  const { promptId } = previous;
  reached.promptId = promptId;
  reached.submitConfirmed = true;
  if (previous.backend.id !== reached.target.backend.id) {
    const log = reached.target.log.child({ backend: previous.backend.id, leased: reached.target.backend.id });
    reached.target = targetOf(at.deps, previous.backend, log);
  }
  const { backend, client, log } = reached.target;
  log.info({ promptId }, 're-attaching to the prompt an earlier attempt submitted');
  promptReattached.inc({ backend: backend.id });
  followers.heartbeat.prompt(backend.id, promptId);
  // The prompt's events go to the socket of the attempt that submitted it, which has ended: reclaim that
  // client id, or a long remaining render would look stalled for want of progress events.
  const ownerClientId = await queuedClientId(client, promptId, at.signal);
  const follow = followOptions(at, reached.target, followers);
  const attrs = { 'comfyui.backend': backend.id, 'comfyui.prompt_id': promptId, 'comfyui.reattached': true };
  return inSpan('comfyui.follow', attrs, () => followPrompt(client, { ...follow, promptId, ...(ownerClientId ? { ownerClientId } : {}) }));
}
/**
 * A new prompt, with the id this attempt derives: the render's inputs uploaded to the backend that runs it (now
 * that it is known), the graph checked against the backend's nodes, then submitted and followed. The submit is
 * idempotent: a prompt ComfyUI already has under this id (a retried submit) is followed, not sent again.
 */
async function submitNew(at: Attempt, reached: Reached, followers: Followers): Promise<FollowResult> {
  const { deps, input } = at;
  const { backend, client, log } = reached.target;
  const promptId = attemptPromptId(at.execution, input.item, input.attempt);
  reached.promptId = promptId;
  if (input.uploads && input.uploads.length > 0) {
    const t0 = Date.now();
    const uploads = input.uploads;
    await inSpan('comfyui.upload', { 'comfyui.backend': backend.id, 'comfyui.files': uploads.length }, () => uploadAll(deps, backend, uploads));
    at.timings.push({ stage: 'uploadInputs', ms: Date.now() - t0 });
  }
  await validateBeforeSubmit(client, { graph: input.graph, backend }, followers.objectInfo);
  // Two sibling spans: the submission (`POST /prompt`, or finding it already queued) up to onSubmitted, then
  // following the prompt to its end.
  const attrs = { 'comfyui.backend': backend.id, 'comfyui.prompt_id': promptId };
  const submitSpan = {
    name: 'comfyui.submit',
    kind: SpanKind.CLIENT,
    attributes: { ...attrs, 'http.request.method': 'POST', 'url.path': '/prompt', 'server.address': backend.url },
  };
  const neverSubmitted = isFirstSubmit(reached);
  reached.submitSent = true;
  return inSpanPair(submitSpan, { name: 'comfyui.follow', attributes: attrs }, (submitted) =>
    submitWithReupload(deps, reached.target, input, followers.objectInfo, {
      ...followOptions(at, reached.target, followers),
      graph: input.graph,
      promptId,
      neverSubmitted,
      extraData: {
        comfy_durable: { render_id: input.renderId, item: input.item, attempt: input.attempt },
        ...(followers.previews.wanted() ? { preview_method: 'auto' } : {}),
      },
      // Stopping the prompt is decided by the attempt (it depends on why it stops), not in submitAndFollow.
      cancelOnAbortOrStall: false,
      onSubmitted: ({ reattached }) => {
        reached.submitConfirmed = true;
        followers.heartbeat.prompt(backend.id, promptId);
        log.info({ promptId, reattached }, 'prompt submitted');
        submitted({ 'comfyui.reattached': reattached });
      },
    }),
  );
}

/**
 * Whether no request with this attempt's prompt id can have been sent before: its id is derived from the
 * workflow's attempt number, each attempt is one activity run Temporal does not retry (maximumAttempts 1,
 * checked here too), an attempt handed back unstarted (NotDispatched, sent again under the same number) never
 * got this far, and this run has not tried to submit yet (renderReachable renders a second time after a
 * backend stopped answering, maybe with the first POST received). Then the submit skips asking ComfyUI for the
 * id first: a round trip of every render.
 */
function isFirstSubmit(reached: Reached): boolean {
  return !reached.submitSent && Context.current().info.attempt === 1;
}

/** Fetch the prompt's outputs from the ComfyUI that ran it into the blob store: the attempt's result. */
async function collectRun(at: Attempt, reached: Reached, result: FollowResult): Promise<PromptRun> {
  const { deps, input } = at;
  const { backend, client, log } = reached.target;
  const { promptId } = reached;
  const files = result.files.map(({ filename, subfolder, type }) => ({ filename, subfolder, type }));
  const t0 = Date.now();
  const collectAttrs = { 'comfyui.backend': backend.id, 'comfyui.prompt_id': promptId, 'comfyui.files': files.length };
  // A client's own graph keeps every file it reported, per node (its answers are in ComfyUI's shape).
  const collected =
    input.request.kind === 'prompt'
      ? await inSpan('comfyui.collect', collectAttrs, () => collectPromptOutputs(deps, client, result.outputs))
      : { refs: await inSpan('comfyui.collect', collectAttrs, () => collectFiles(deps, client, files, input.request, input.item)), ui: undefined };
  const outputs = collected.refs;
  at.timings.push({ stage: 'collectOutputs', ms: Date.now() - t0 });
  const blank = outputs.filter((o) => o.blank);
  if (blank.length > 0)
    log.warn({ promptId, blank: blank.map((o) => o.blank) }, 'output image of one colour (a black one: NaNs in the VAE): flagged in the result');
  return {
    promptId,
    attempt: input.attempt,
    files,
    startedAt: result.startedAt ?? at.startedAt,
    finishedAt: result.finishedAt ?? Date.now(),
    backend: backend.id,
    outputs,
    timings: at.timings,
    ...(collected.ui ? { ui: collected.ui } : {}),
  };
}

/**
 * Submit; when ComfyUI says a LoadImage file is missing (HTTP 400, nothing queued), upload the render's
 * inputs again and submit once more with the same prompt id.
 */
async function submitWithReupload(
  deps: ActivityDeps,
  { backend, client, log }: Target,
  input: RunPromptInput,
  objectInfo: ObjectInfoCache,
  opts: SubmitAndFollowOptions,
): Promise<FollowResult> {
  let reuploaded = false;
  for (;;) {
    try {
      // After a refused submit (re-uploaded inputs), the id is looked up again like any resubmit.
      return await submitAndFollow(client, reuploaded ? { ...opts, neverSubmitted: false } : opts);
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
