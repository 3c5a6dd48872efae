/**
 * What operators see of a render, shared by the CLI (`comfy-durable renders …`), the HTTP routes
 * (`/renders…`) and the gallery page. Plain JSON: timestamps are ISO strings, durations milliseconds.
 */
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { OutputOutcome } from '../contracts/outcome.ts';
import type { BlobRef, PartialItem, RenderRequest, StageTiming } from '../contracts/render.ts';

/**
 * What happened, beyond the status: a completed render may be `partial` (interrupt, skip) or `blank` (an
 * output of one colour); a failed one names its class.
 */
export const RENDER_OUTCOMES = ['completed', 'partial', 'interrupted', 'skipped', 'blank', 'failed'] as const;
export type RenderOutcomeName = 'completed' | 'partial' | 'blank' | 'failed' | 'cancelled' | 'timed-out' | 'terminated';

export interface OutcomeView {
  outcome: RenderOutcomeName;
  /** One line: `partial: interrupted at step 7/20`, `blank: output 0 is black (NaN in the VAE)`, `failed: ComfyExecution`. */
  summary: string;
  /** Failed renders: the failure's class (ComfyExecution, ComfyStall, Timeout, …). */
  failureClass?: string;
  interrupted?: boolean;
  skipped?: number[];
  partial?: PartialItem[];
  /** Indexes of blank outputs. */
  blank?: number[];
}

/** Temporal's execution statuses, spelled the way operators type them. */
export const RENDER_STATUSES = ['running', 'completed', 'failed', 'cancelled', 'terminated', 'timed-out'] as const;
export type RenderStatusFilter = (typeof RENDER_STATUSES)[number];
export type RenderStatusName = RenderStatusFilter | 'continued-as-new' | 'unknown';

/** One row of a listing: visibility data (search attributes + memo), plus the outcome of closed renders. */
export interface RenderSummary {
  id: string;
  runId: string;
  status: RenderStatusName;
  taskQueue: string;
  model?: string;
  kind?: string;
  backend?: string;
  replayOf?: string;
  /** The API key's name that started it (none on a service without named keys). */
  owner?: string;
  startedAt: string;
  closedAt?: string;
  durationMs?: number;
  prompt?: string;
  size?: string;
  steps?: number;
  seed?: number;
  images?: number;
  /** Priority key it was started with (1 most urgent … 5; 3 when the client gave none). */
  priority?: number;
  /** Number of output images of a completed render. */
  outputs?: number;
  /** Why a failed, timed-out or terminated render ended, in one line. */
  reason?: string;
  /** What happened to a closed render (read with its outcome). */
  outcome?: RenderOutcomeName;
  /** One line saying it (`partial: interrupted at step 7/20`). */
  outcomeSummary?: string;
  /** Failed renders: the failure's class. */
  failureClass?: string;
}

export interface RenderPage {
  renders: RenderSummary[];
  /** Opaque; pass back as `cursor` for the next page. Absent on the last page. */
  nextCursor?: string;
}

/** A Temporal failure, flattened for people: type, message, and the cause chain. */
export interface FailureView {
  message: string;
  /** ApplicationFailure type (e.g. `ComfyExecution`), or the failure kind (`Timeout`, `Cancelled`, ...). */
  type?: string;
  nonRetryable?: boolean;
  timeoutType?: string;
  /** For activity failures: which activity. */
  activityType?: string;
  retryState?: string;
  /** First details payload of an ApplicationFailure (ComfyUI's node, input and message). */
  details?: unknown;
  cause?: FailureView;
}

export type AttemptOutcome = 'running' | 'waiting' | 'completed' | 'failed' | 'timed-out' | 'cancelled';

export interface AttemptView {
  attempt: number;
  /** Unknown for attempts before the last one that Temporal recorded: it keeps only the last start. */
  startedAt?: string;
  endedAt?: string;
  durationMs?: number;
  outcome: AttemptOutcome;
  error?: FailureView;
  /** ComfyUI prompt of this attempt (runPrompt), when known. */
  promptId?: string;
  /** ComfyUI backend the attempt ran on (bound when the attempt started). */
  backend?: string;
  /** Where an attempt's time went (uploadInputs, prompt, collectOutputs), from its result. */
  steps?: StageTiming[];
  note?: string;
}

/** `abandoned`: still pending when the render ended (terminated, timed out). */
export type StageOutcome = 'scheduled' | 'running' | 'completed' | 'failed' | 'timed-out' | 'cancelled' | 'abandoned';

/**
 * One stage: `buildGraph` (done by the submitter before the start), then `runPrompt[i]` (one activity per
 * attempt that uploads, renders and stores outputs), and `stopPrompts` when a render ended with a prompt
 * possibly still running.
 */
export interface StageView {
  name: string;
  activityType: string;
  activityId: string;
  /** Not a Temporal activity (buildGraph): no schedule or start events, its result is the workflow's input. */
  local?: boolean;
  /** buildGraph, done by the submitter before the start. */
  builtByFront?: boolean;
  item?: number;
  taskQueue?: string;
  scheduledAt?: string;
  endedAt?: string;
  /** From scheduling to the end: includes waiting for a GPU slot and retry back-off. */
  durationMs?: number;
  outcome: StageOutcome;
  attempts: AttemptView[];
  maxAttempts?: number;
  error?: FailureView;
  cancelRequested?: boolean;
  /** Live heartbeat of a running runPrompt (`PromptHeartbeat`). */
  heartbeat?: unknown;
}

export interface PromptView {
  item: number;
  promptId: string;
  attempt?: number;
  startedAt?: string;
  finishedAt?: string;
  outcome?: AttemptOutcome;
  /**
   * The prompt was stopped by `/sdapi/v1/interrupt` or `/sdapi/v1/skip` (ComfyUI's history says
   * `execution_interrupted`), at the sampling step reached when known: its activity completed, the prompt did not.
   */
  stopped?: { by: 'interrupt' | 'skip'; step?: number; steps?: number };
}

export interface GraphView {
  item: number;
  seed: number;
  graph: ComfyGraph;
}

export interface RenderTimeline {
  id: string;
  runId?: string;
  status: RenderStatusName;
  taskQueue?: string;
  model?: string;
  kind?: string;
  backend?: string;
  replayOf?: string;
  startedAt?: string;
  closedAt?: string;
  durationMs?: number;
  memo: Record<string, unknown>;
  /** Temporal priority key of the render (from its start event; 3 = the default). */
  priority?: number;
  /** The resolved request exactly as the workflow received it. */
  request?: RenderRequest;
  /** The ComfyUI graphs built before the start (the workflow's second argument), one per output item. */
  graphs: GraphView[];
  prompts: PromptView[];
  outputs: BlobRef[];
  /** What happened to each output: completed or partial (stopped by interrupt or skip at a step), blank. */
  outputOutcomes?: OutputOutcome[];
  /** What happened to the render, once it ended. */
  outcome?: OutcomeView;
  stages: StageView[];
  /** Per-stage timings the workflow reported (completed renders). */
  timings?: StageTiming[];
  /** Why the render ended without images (failed, timed out, terminated, cancelled), in one line. */
  reason?: string;
  failure?: FailureView;
  cancelRequestedAt?: string;
  /** The render's webhook, when it has one: delivered, failing (last status) or given up. */
  webhook?: WebhookView;
  /** Workflow task failures (e.g. a nondeterminism error after a bad deploy). */
  workflowTaskFailures: FailureView[];
  historyEvents: number;
}

/** A render's webhook delivery (operators/webhook.ts). */
export interface WebhookView {
  /** The `webhook` child workflow (Temporal UI: a child of the render). */
  workflowId: string;
  webhookId?: string;
  url?: string;
  /** `video.completed`, `image.failed`, … */
  type?: string;
  /** `pending`: the render started its delivery, which has not tried yet (or its history could not be read). */
  state: 'pending' | 'delivering' | 'failing' | 'delivered' | 'gave-up';
  attempts: number;
  maxAttempts?: number;
  lastStatus?: number;
  lastError?: string;
  nextAttemptAt?: string;
  deliveredAt?: string;
}

export interface ReplayStarted {
  originalId: string;
  renderId: string;
  seed: number;
  newSeed: boolean;
}

export interface BulkReplayItem {
  originalId: string;
  model?: string;
  startedAt: string;
  reason?: string;
  /** Set when a replay was started (not in a dry run). */
  renderId?: string;
  /** Why this one was not replayed. */
  skipped?: string;
}

export interface BulkReplayResult {
  dryRun: boolean;
  query: string;
  items: BulkReplayItem[];
}
