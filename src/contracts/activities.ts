/** Activity signatures shared by the workflow (type-only import) and the activity implementations. */
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { InputUpload, PromptRun, RenderPlan, RenderRequest } from './render.ts';
import type { DeliverWebhookInput, WebhookAttemptResult, WebhookTarget } from './webhooks.ts';

export interface RenderLimits {
  stallTimeoutMs: number;
  deadlineMs: number;
  heartbeatTimeoutMs: number;
  maxAttempts: number;
  /** Delay before the second attempt of an item, doubled for each further one up to `backoffMaxMs`. */
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** An attempt needs at least this much of the item's deadline left to be started. */
  minAttemptMs: number;
}

/**
 * One prompt attempt, scheduled on the shared GPU queue: it runs on whichever free ComfyUI the worker that
 * takes it has (backends/gpu-pool.ts), uploads the inputs there, submits, follows, and stores the outputs:
 * the result carries the blob references.
 */
export interface RunPromptInput {
  renderId: string;
  item: number;
  /**
   * 1-based attempt for this item, counted by the workflow (each attempt is its own activity, so every
   * attempt and its failure is in history). Part of the deterministic prompt id; ids of attempts 1..n-1 are
   * re-derived to re-attach to a prompt an earlier attempt left running.
   */
  attempt: number;
  graph: ComfyGraph;
  stallTimeoutMs: number;
  /**
   * The render's input images (blob references, a few hundred bytes each): uploaded again when ComfyUI
   * reports a LoadImage file missing (it was restarted on a fresh input folder).
   */
  uploads?: InputUpload[];
  /** The model, for backend affinity (prefer a ComfyUI that last ran it). */
  model: string;
  /** For storing the outputs (with the request's infotext). */
  request: RenderRequest;
  /**
   * Backend ids of attempts 1..attempt-1 where known (from their results, failures or heartbeats), to find
   * a prompt an earlier attempt left running; an unknown one ('') is looked for on every backend.
   */
  previousBackends?: string[];
}

/** What `runPrompt` heartbeats: live progress for `/sdapi/v1/progress` and the operators (re-attach uses re-derived ids). */
export interface PromptHeartbeat {
  backend: string;
  promptId: string;
  node?: string;
  value?: number;
  max?: number;
  lastEventAt: number;
  /** Attempt that heartbeated (the prompt id derives from it). */
  attempt?: number;
  /** How far the item is, 0..1, never decreasing within the attempt (item-progress.ts), and its stage. */
  fraction?: number;
  phase?: 'starting' | 'encoding' | 'sampling' | 'decoding' | 'saving';
  /** The item (0-based) of how many the render has: the render's progress is (item + fraction) / items. */
  item?: number;
  items?: number;
  /** Waiting in its worker for a free ComfyUI (backends/gpu-pool.ts's lookahead): no prompt yet. */
  queued?: true;
}

/** The render's graphs and limits, built by the submitter (renders/build-render.ts): the workflow's second argument. */
export interface BuiltRender {
  plan: RenderPlan;
  limits: RenderLimits;
  /** Where the render's event goes when it ends (a `webhook` child workflow delivers it); absent: no webhook. */
  webhook?: WebhookTarget;
}

// Property signatures, not methods: Temporal calls activities as plain functions, never on this object.
export interface RenderActivities {
  runPrompt: (input: RunPromptInput) => Promise<PromptRun>;
  /**
   * Stop whatever ComfyUI may still run for attempts 1..attempts of an item (cancel while running, dequeue
   * while pending, no-op once finished or unknown). Used when a render ends — cancelled, or out of
   * attempts/time — while an attempt's prompt may have been left running for a re-attach that never comes.
   */
  stopPrompts: (input: StopPromptsInput) => Promise<void>;
}

export interface StopPromptsInput {
  /** The backend of each attempt 1..n ('' = unknown: look on every backend). */
  attemptBackends: string[];
  item: number;
  attempts: number;
}

/** The `webhook` workflow's one activity: one signed POST of the event, on the webhook task queue. */
export interface WebhookActivities {
  deliverWebhook: (input: DeliverWebhookInput) => Promise<WebhookAttemptResult>;
}

/** The retention workflow's one activity: `renders prune --older-than RENDER_RETENTION_DAYS`, by the worker. */
export interface RetentionActivities {
  pruneExpired: () => Promise<RetentionRunResult>;
}

/** What one prune did (`renders prune`, src/retention/prune.ts): what it deleted, or would delete on a dry run. */
export interface PruneResult {
  dryRun: boolean;
  cutoff: string;
  rendersDeleted: string[];
  rendersKept: number;
  blobsDeleted: number;
  bytesFreed: number;
  comfyInputsDeleted: number;
}

/** What a retention run records in its history: the prune's result, with at most 100 of the ids deleted. */
export interface RetentionRunResult extends PruneResult {
  rendersDeletedCount: number;
}
