/**
 * Starts render workflows and waits for them: the Temporal side of the submission service (submit.ts), which
 * decides ids, fingerprints and graphs; nothing else starts a render.
 */
import { setMaxListeners } from 'node:events';
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ServiceError,
  TerminatedFailure,
  TimeoutFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  isGrpcServiceError,
  type Client,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { TypedSearchAttributes, type PayloadConverter } from '@temporalio/common';
import { renderResultsTold, rendersStarted } from '../metrics/metrics.ts';
import type { BuiltRender } from '../contracts/activities.ts';
import { promptSummaryOf, type RenderRequest, type RenderResult } from '../contracts/render.ts';
import { GaveUpFailureType } from '../contracts/failures.ts';
import { RENDER_CLIENT, RENDER_KIND, RENDER_MODEL, RENDER_OWNER, RENDER_REPLAY_OF } from '../contracts/search-attributes.ts';
import { renderPriority } from '../contracts/priority.ts';
import type { EagerStarter } from './eager-start.ts';
import type { ClosedRuns } from './closed-runs.ts';
import type { PlainPayload } from '../contracts/closed-run.ts';
import type { RenderWorkflow } from '../contracts/workflows.ts';
import { RequestError } from '../errors/request-error.ts';

export interface StartOptions {
  /** The workflow id (render-ids.ts): derived from the Idempotency-Key when there is one. */
  renderId: string;
  /** The render's graphs and limits, built by the submitter: the workflow's second argument. */
  built: BuiltRender;
  /**
   * Set when the id comes from an Idempotency-Key: the fingerprint of the route and body it was first used
   * with (requestFingerprint), kept in the memo; a start that finds the id taken with another one conflicts.
   */
  fingerprint?: string;
  /** Temporal priority key, 1 (most urgent) … 5 (contracts/priority.ts); the server's default (3) when unset. */
  priority?: number;
  /** Default: this service's queue (a replay runs on its original's). */
  taskQueue?: string;
  /** The API key's name that started it (src/renders/owner.ts); none on a service without named keys. */
  owner?: string;
  /** What the front changed in the request, kept in the memo (the video job object lists them). */
  warnings?: readonly string[];
  /**
   * The client it was started for (src/fair/client-context.ts): its RenderClient search attribute (admission's
   * per-client count) and its fairness key in the shared GPU queue (contracts/priority.ts).
   */
  client?: string;
}

interface WaitOptions {
  /** How long Temporal may be unreachable before the wait gives up (default TRANSIENT_WAIT_BUDGET_MS). */
  transientBudgetMs?: number;
}

/** A render's answer prepared ahead from the result its completion carries, and that result's JSON. */
interface EarlyAnswer<T> {
  text: string;
  answer: Promise<T>;
}

/** The closed render's result, who told it, and (told by the workers) its JSON as encoded. */
interface ClosedResult {
  result: RenderResult;
  text?: string | undefined;
  by: 'workers' | 'temporal';
}

/** The JSON text of a plain JSON payload, else undefined. */
function jsonText(p: PlainPayload): string | undefined {
  const encoding = p.metadata.encoding;
  if (!encoding || Buffer.from(encoding).toString('utf8') !== 'json/plain') return undefined;
  return Buffer.from(p.data.buffer, p.data.byteOffset, p.data.byteLength).toString('utf8');
}

/** Starts preparing the answer from a completion's result; undefined when that result is not plain JSON or does not decode. */
function answerAhead<T>(payload: PlainPayload, converter: PayloadConverter, prepare: (result: RenderResult) => Promise<T>): EarlyAnswer<T> | undefined {
  const text = jsonText(payload);
  if (text === undefined) return undefined;
  let result: RenderResult;
  try {
    result = converter.fromPayload<RenderResult>(payload);
  } catch {
    return undefined;
  }
  // Never thrown here (this runs in the port's message handler): a builder that throws at once rejects its answer.
  const answer = Promise.resolve().then(() => prepare(result));
  // Used only if the render closes with this result; a failure then is prepared again.
  answer.catch(() => undefined);
  return { text, answer };
}

interface StartedRun {
  handle: WorkflowHandle<RenderWorkflow>;
  runId: string;
}

export interface StartedRender {
  renderId: string;
  handle: WorkflowHandle<RenderWorkflow>;
  /** The run this call started (unset when it attached): its close may be told by this process's workers (closed-runs.ts). */
  runId?: string;
  /** True when an Idempotency-Key attached this call to an earlier render. */
  attached: boolean;
  /** Model and start time, for the render metrics (only a render this call started is counted). */
  model?: string;
  startedAt?: number;
}

/**
 * Where ComfyUI says the problem is, for the client's error body: node id and class, input name, and
 * ComfyUI's own message (validation errors and node exceptions both carry them).
 */
export interface FailureFields {
  node?: string;
  node_type?: string;
  input?: string;
  comfy_message?: string;
}

/** A render that ended without images, classified for the HTTP layer. */
export class RenderFailedError extends Error {
  override name = 'RenderFailedError';
  constructor(
    readonly renderId: string,
    readonly status: number,
    readonly kind: string,
    message: string,
    readonly details?: unknown,
    readonly fields: FailureFields = {},
  ) {
    super(message);
  }
}

/** An Idempotency-Key already used on another route or with another body: 409, naming the header. */
export class IdempotencyConflictError extends RequestError {
  constructor(renderId: string) {
    super(409, 'Idempotency-Key', `Idempotency-Key was already used with a different request (another route or body; render ${renderId})`);
  }
}

/** Memo text is small: a few warnings of a few hundred characters at most. */
const MAX_MEMO_WARNINGS = 10;

interface MemoExtras {
  fingerprint?: string;
  priority?: number;
  owner?: string;
  warnings?: readonly string[];
}

function memoFor(request: RenderRequest, { fingerprint, priority, owner, warnings }: MemoExtras): Record<string, unknown> {
  const { prompt, steps } = promptSummaryOf(request);
  return {
    ...(owner !== undefined ? { owner } : {}),
    ...(priority !== undefined ? { priority } : {}),
    prompt: prompt.slice(0, 200),
    size: `${request.width}x${request.height}`,
    steps,
    seed: request.seed,
    images: request.batchSize * request.nIter,
    // Video job objects (GET /v1/videos) are answered from the memo: full prompt, snapped length, rate.
    ...(request.kind === 'video'
      ? { kind: 'video', videoPrompt: request.prompt, frames: request.video.frames, fps: request.video.fps, task: request.video.task }
      : {}),
    // ComfyUI's /queue is answered from the memo: the prompt's id, its client and number.
    ...(request.kind === 'prompt'
      ? { promptId: request.graph.promptId, number: request.graph.number, ...(request.graph.clientId ? { clientId: request.graph.clientId } : {}) }
      : {}),
    // Replays are linked to their original in the memo too (shown by the Temporal UI without a query).
    ...(request.replayOf ? { replayOf: request.replayOf } : {}),
    ...(fingerprint ? { bodyFingerprint: fingerprint } : {}),
    ...(warnings && warnings.length > 0 ? { warnings: warnings.slice(0, MAX_MEMO_WARNINGS).map((w) => w.slice(0, 300)) } : {}),
  };
}

export class RenderService {
  constructor(
    /** Public for the operator routes (list, show, replay), which share this process's connection. */
    readonly client: Client,
    private readonly taskQueue: string,
    /**
     * Starts renders eagerly on the workers' own connection (eager-start.ts): the server hands the render's
     * first workflow task back in the start response, so a render skips one matching hop and one poll
     * (bench/eager-probe.ts). Results are still awaited on `client`.
     */
    private readonly eagerStarter?: EagerStarter,
    /**
     * The closes this process's workers tell (closed-runs.ts): a render they completed is answered from there,
     * without waiting on the history long poll. Not used with a payload codec (the results would need it).
     */
    private readonly closedRuns?: ClosedRuns,
  ) {}

  async start(request: RenderRequest, opts: StartOptions): Promise<StartedRender> {
    const { renderId, fingerprint } = opts;
    const searchAttributes = [
      { key: RENDER_MODEL, value: request.model },
      { key: RENDER_KIND, value: request.kind },
      ...(request.replayOf ? [{ key: RENDER_REPLAY_OF, value: request.replayOf }] : []),
      ...(opts.owner !== undefined ? [{ key: RENDER_OWNER, value: opts.owner }] : []),
      ...(opts.client !== undefined ? [{ key: RENDER_CLIENT, value: opts.client }] : []),
    ];
    const options: WorkflowStartOptions<RenderWorkflow> = {
      taskQueue: opts.taskQueue ?? this.taskQueue,
      workflowId: renderId,
      args: [request, opts.built],
      memo: memoFor(request, { fingerprint, priority: opts.priority, owner: opts.owner, warnings: opts.warnings }),
      // Inherited by the render's activities: the shared GPU queue hands out lower keys first, and takes clients
      // in turn within a key (Temporal's fairness keys, enabled on the embedded server: dev-server.ts).
      ...renderPriority(opts.priority, opts.client),
      typedSearchAttributes: new TypedSearchAttributes(searchAttributes),
      // A key attaches to its render while it runs and after it completed (same images, no new render);
      // only after a failure may the same key start it again.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    };
    /** Set when an eager start failed but may have reached the server: a duplicate then is our own render. */
    let triedEager = false;
    try {
      const { handle, runId } = this.eagerStarter ? await this.startEagerly(options, () => (triedEager = true)) : await this.startPlainly(options);
      rendersStarted.inc({ model: request.model });
      return { renderId, handle, runId, attached: false, model: request.model, startedAt: Date.now() };
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError && fingerprint === undefined && triedEager) {
        // The eager start went through but its answer was lost (then the plain start found it): the id is
        // this request's own fresh one, so the running render is ours.
        rendersStarted.inc({ model: request.model });
        return { renderId, handle: this.client.workflow.getHandle<RenderWorkflow>(renderId), attached: false, model: request.model, startedAt: Date.now() };
      }
      if (!(err instanceof WorkflowExecutionAlreadyStartedError) || fingerprint === undefined) throw err;
      const handle = this.client.workflow.getHandle<RenderWorkflow>(renderId);
      const described = await handle.describe();
      const memo = described.memo ?? {};
      if (memo.bodyFingerprint !== fingerprint) {
        throw new IdempotencyConflictError(renderId);
      }
      return { renderId, handle, attached: true };
    }
  }

  /**
   * Start on the worker's connection with `requestEagerStart`; the handle returned waits on `client`. Should
   * the eager start fail for any other reason than the id being taken (the worker's connection closing in a
   * shutdown, say), the render is started the ordinary way.
   */
  private async startEagerly(options: WorkflowStartOptions<RenderWorkflow>, mayHaveStarted: () => void): Promise<StartedRun> {
    let firstExecutionRunId: string;
    try {
      firstExecutionRunId = await this.eagerStarter!(options);
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw err;
      // The failed start may still have reached the server: the ordinary one may then find it started.
      mayHaveStarted();
      return this.startPlainly(options);
    }
    return { handle: this.client.workflow.getHandle<RenderWorkflow>(options.workflowId, undefined, { firstExecutionRunId }), runId: firstExecutionRunId };
  }

  private async startPlainly(options: WorkflowStartOptions<RenderWorkflow>): Promise<StartedRun> {
    const handle = await this.client.workflow.start<RenderWorkflow>('render', options);
    return { handle, runId: handle.firstExecutionRunId };
  }

  /**
   * Before anything is stored for a request with an Idempotency-Key (its render id and fingerprint):
   * `attach` when the key's render runs or completed with this route and body, `new` when a render would
   * start; another fingerprint is an IdempotencyConflictError now, so a refused request leaves no input
   * images behind. (`start` checks again: two requests may race between here and there.)
   */
  async checkKey(renderId: string, fingerprint: string): Promise<'attach' | 'new'> {
    let described;
    try {
      described = await this.client.workflow.getHandle<RenderWorkflow>(renderId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'new';
      throw err;
    }
    // After a failure the key may start its render again, with any body (ALLOW_DUPLICATE_FAILED_ONLY).
    if (described.status.name !== 'RUNNING' && described.status.name !== 'COMPLETED') return 'new';
    const memo = described.memo ?? {};
    if (memo.bodyFingerprint !== fingerprint) throw new IdempotencyConflictError(described.workflowId);
    return 'attach';
  }

  /**
   * The render's result. Temporal being briefly unreachable (restarted, network blip) is not the render's
   * failure: keep waiting, since the workflow goes on on the server, for up to `transientBudgetMs`.
   */
  /** Set by abortWaits: every wait ends with this (a retryable 503), the renders go on in Temporal. */
  private readonly stopping = new AbortController();

  /**
   * The front is going away while its GPU goes away too (the model-swapping proxy stops): a client waiting on a
   * render would be cut off without an answer. Each gets a 503 instead; its render stays in Temporal and a retry
   * with the same Idempotency-Key attaches to it (or to its result).
   */
  abortWaits(why: string): void {
    this.stopping.abort(why);
  }

  async wait(started: StartedRender, opts: WaitOptions = {}): Promise<RenderResult> {
    return this.untilStopping(started, () => this.closedAnswer(started, opts, async (result) => result, false));
  }

  /**
   * The protocol's answer to a render: `prepare` (its response, built from the result) run on the render's
   * result once the render is closed in Temporal. When this process's workers ran it, `prepare` runs ahead, on
   * the result their completion carries, while the server records that completion; its answer is used when the
   * closed result is that same one (it nearly always is). So building the response (reading the images, base64)
   * no longer comes after the close. `prepare` must be free of effects: it may run twice.
   */
  async answer<T>(started: StartedRender, prepare: (result: RenderResult) => Promise<T>, opts: WaitOptions = {}): Promise<T> {
    return this.untilStopping(started, () => this.closedAnswer(started, opts, prepare, true));
  }

  private async untilStopping<T>(started: StartedRender, wait: () => Promise<T>): Promise<T> {
    const signal = this.stopping.signal;
    if (signal.aborted) throw stoppingError(started.renderId, signal);
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_resolve, reject) => {
      onAbort = () => reject(stoppingError(started.renderId, signal));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([wait(), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
  }

  /**
   * The long poll, raced against this process's workers telling the run's close (closed-runs.ts): whichever
   * comes first. The long poll stays the authority for everything else (a failure, a render run elsewhere, a
   * worker that tells nothing) and is cancelled once the close was told. `ahead`: `prepare` also runs on each
   * completion the workers tell as sent, and the last one's answer is taken if the run closed with its result.
   */
  private async closedAnswer<T>(started: StartedRender, opts: WaitOptions, prepare: (result: RenderResult) => Promise<T>, ahead: boolean): Promise<T> {
    const closedRuns = this.closedRuns;
    const runId = started.runId;
    // Told by the workers only with the results as they encode them: not through a payload codec.
    if (!closedRuns || runId === undefined || this.client.options.loadedDataConverter.payloadCodecs.length > 0) {
      return prepare(await this.pollResult(started, opts));
    }
    const converter = this.client.options.loadedDataConverter.payloadConverter;
    let early: EarlyAnswer<T> | undefined;
    const onClosing = ahead ? (payload: PlainPayload) => (early = answerAhead(payload, converter, prepare) ?? early) : undefined;
    const told = closedRuns.waitFor(runId, onClosing);
    const poll = this.longPollOfOneWait();
    let closed: ClosedResult;
    try {
      // A result that does not decode here is left to the long poll, which reports whatever is wrong with it.
      const fromWorkers = told.result
        .then((p): ClosedResult => ({ result: converter.fromPayload<RenderResult>(p), text: jsonText(p), by: 'workers' }))
        .catch(() => new Promise<never>(() => undefined));
      const fromTemporal = this.pollResult(started, opts, poll.signal).then((result): ClosedResult => ({ result, by: 'temporal' }));
      closed = await Promise.race([fromTemporal, fromWorkers]);
    } finally {
      told.stop();
      poll.end();
    }
    // The front stopped waiting (abortWaits answered 503): nobody takes this answer.
    if (this.stopping.signal.aborted) throw stoppingError(started.renderId, this.stopping.signal);
    renderResultsTold.inc({ by: closed.by });
    const ready: EarlyAnswer<T> | undefined = early;
    if (ready && ready.text === (closed.text ?? JSON.stringify(closed.result))) {
      try {
        return await ready.answer;
      } catch {
        // Prepared again below, from the closed result: its error, if it fails again, is the answer.
      }
    }
    return prepare(closed.result);
  }

  /**
   * The cancel signal of one wait's long poll: aborted by `end()` (the wait is over) or when the front stops
   * waiting (abortWaits), so no long poll outlives its wait.
   */
  private longPollOfOneWait(): { signal: AbortSignal; end: () => void } {
    const poll = new AbortController();
    // The SDK adds an abort listener for each gRPC call made under the signal and keeps it: the long poll is one
    // call per ~20 s server timeout, so a render waiting its turn for minutes adds more than node's default 10.
    setMaxListeners(0, poll.signal);
    const stopping = this.stopping.signal;
    const onStopping = (): void => poll.abort();
    stopping.addEventListener('abort', onStopping, { once: true });
    return {
      signal: poll.signal,
      end: () => {
        stopping.removeEventListener('abort', onStopping);
        poll.abort();
      },
    };
  }

  private async pollResult(started: StartedRender, opts: WaitOptions, cancel?: AbortSignal): Promise<RenderResult> {
    const budget = opts.transientBudgetMs ?? TRANSIENT_WAIT_BUDGET_MS;
    let firstTransientAt: number | undefined;
    let delay = 250;
    for (;;) {
      // Aborted during a back-off: no further call.
      cancel?.throwIfAborted();
      try {
        // Outcomes are counted by the worker when the workflow ends (src/metrics/render-sinks.ts), not here.
        return await (cancel ? this.client.withAbortSignal(cancel, () => started.handle.result()) : started.handle.result());
      } catch (err) {
        if (cancel?.aborted) throw err;
        if (isTransient(err)) {
          firstTransientAt ??= Date.now();
          if (Date.now() - firstTransientAt < budget) {
            await new Promise((r) => setTimeout(r, delay));
            delay = Math.min(delay * 2, 5_000);
            continue;
          }
        }
        throw classifyFailure(started.renderId, err);
      }
    }
  }

  handle(renderId: string): WorkflowHandle<RenderWorkflow> {
    return this.client.workflow.getHandle<RenderWorkflow>(renderId);
  }
}

function stoppingError(renderId: string, signal: AbortSignal): RenderFailedError {
  return new RenderFailedError(
    renderId,
    503,
    'ServiceStopping',
    `${String(signal.reason)}: the render goes on; send the request again with the same Idempotency-Key to get its result`,
  );
}

/** How long `wait` rides out Temporal being unreachable before answering 502. */
const TRANSIENT_WAIT_BUDGET_MS = 120_000;

/** gRPC codes that mean "try again": UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, UNKNOWN (a dropped connection). */
const TRANSIENT_GRPC_CODES = new Set([14, 4, 8, 10, 2]);

function isTransient(err: unknown): boolean {
  if (err instanceof WorkflowFailedError) return false;
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e)) return TRANSIENT_GRPC_CODES.has(e.code);
    if (e instanceof ServiceError) continue;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT)$/.test(code)) return true;
  }
  return err instanceof ServiceError;
}

/**
 * HTTP status per failure type: the client's request was fine but ComfyUI cannot run it as configured
 * (422); ComfyUI or the GPU is unavailable or out of resources, try later (503); it took too long (504);
 * a node raised (500, with node and message).
 */
const STATUS_BY_TYPE: Record<string, number> = {
  ComfyValidation: 422,
  InvalidRender: 422,
  ComfyExecution: 500,
  NoOutputs: 500,
  ComfyOutOfMemory: 503,
  ComfyBackendUnhealthy: 503,
  ComfyUnavailable: 503,
  ComfyPromptLost: 503,
  ComfyProtocol: 503,
  ComfyInterrupted: 503,
  WorkerShutdown: 503,
  ComfyRequest: 502,
  ComfyStall: 504,
  Timeout: 504,
};

/** Map a workflow failure to an HTTP status and a message naming what ComfyUI said. */
export function classifyFailure(renderId: string, err: unknown): RenderFailedError {
  if (!(err instanceof WorkflowFailedError)) {
    return new RenderFailedError(renderId, 502, 'Unavailable', `render ${renderId}: ${String(err)}`);
  }
  let cause: unknown = err.cause;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof CancelledFailure) {
    return new RenderFailedError(renderId, 409, 'Cancelled', `render ${renderId} was cancelled`);
  }
  if (cause instanceof TerminatedFailure) {
    return new RenderFailedError(renderId, 409, 'Terminated', `render ${renderId} was terminated`);
  }
  // The workflow gave up on an item after several attempts: its message sums them up (and its details list
  // every attempt); the status and fields come from the last attempt's own failure.
  let summary: ApplicationFailure | undefined;
  if (cause instanceof ApplicationFailure && cause.type === GaveUpFailureType) {
    summary = cause;
    cause = cause.cause;
    while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  }
  const attempts = summary?.details?.[0];
  if (cause instanceof TimeoutFailure) {
    const message = summary?.message ?? `timed out (${cause.timeoutType})`;
    return new RenderFailedError(renderId, 504, 'Timeout', `render ${renderId} failed: ${message}`, attempts);
  }
  if (cause instanceof ApplicationFailure) {
    const type = cause.type ?? 'Error';
    const details = cause.details?.[0];
    const message = summary?.message ?? cause.message;
    const merged =
      attempts && typeof attempts === 'object' ? { ...(details && typeof details === 'object' ? details : { detail: details }), ...attempts } : details;
    return new RenderFailedError(renderId, STATUS_BY_TYPE[type] ?? 500, type, `render ${renderId} failed: ${message}`, merged, failureFields(details));
  }
  if (cause instanceof CancelledFailure || summary) {
    const message = summary?.message ?? (cause instanceof Error ? cause.message : String(cause));
    return new RenderFailedError(renderId, 503, 'WorkerShutdown', `render ${renderId} failed: ${message}`, attempts);
  }
  const message = err.cause?.message ?? err.message;
  return new RenderFailedError(renderId, 500, 'Error', `render ${renderId} failed: ${message}`);
}

const rec = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);

/** Node, input and ComfyUI's message from a failure's details (ComfyValidation node_errors, ComfyExecution info). */
export function failureFields(details: unknown): FailureFields {
  const d = rec(details);
  if (!d) return {};
  const out: FailureFields = {};
  const nodeErrors = rec(d.nodeErrors);
  if (nodeErrors) {
    const first = Object.entries(nodeErrors)[0];
    if (first) {
      const [nodeId, ne] = first;
      out.node = nodeId;
      const n = rec(ne);
      const cls = text(n?.class_type);
      if (cls) out.node_type = cls;
      const e = rec(Array.isArray(n?.errors) ? n.errors[0] : undefined);
      const input = text(rec(e?.extra_info)?.input_name);
      if (input) out.input = input;
      const msg = [text(e?.message), text(e?.details)].filter(Boolean).join(': ');
      if (msg) out.comfy_message = msg;
    }
  }
  const nodeId = text(d.nodeId);
  if (nodeId && !out.node) out.node = nodeId;
  const nodeType = text(d.nodeType);
  if (nodeType && !out.node_type) out.node_type = nodeType;
  const exceptionMessage = text(d.exceptionMessage);
  if (exceptionMessage && !out.comfy_message) out.comfy_message = `${text(d.exceptionType) ?? 'Exception'}: ${exceptionMessage.split('\n')[0]}`;
  if (!out.comfy_message) {
    const err = rec(d.error);
    const msg = [text(err?.message), text(err?.details)].filter(Boolean).join(': ');
    if (msg) out.comfy_message = msg;
  }
  return out;
}
