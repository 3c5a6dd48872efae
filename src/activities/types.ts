/** Activity signatures shared by the workflow (type-only import) and the activity implementations. */
import type { ComfyFileRef, ComfyGraph } from '../comfyui/graph.ts';
import type { Backend, BlobRef, InputUpload, PromptRun, RenderPlan, RenderRequest } from '../render/types.ts';
import type { PruneResult } from '../operators/prune.ts';

export interface RenderLimits {
  stallTimeoutMs: number;
  deadlineMs: number;
  heartbeatTimeoutMs: number;
  maxAttempts: number;
}

/**
 * One prompt attempt. Two shapes share the `runPrompt` activity:
 * - current renders: scheduled on the shared GPU queue, no `backend`; the attempt runs on whichever free
 *   ComfyUI the worker that takes it has (backends/gpu-pool.ts), uploads the inputs there, submits, follows,
 *   and stores the outputs (`request` set): the result carries the blob references.
 * - renders started before the shared queue: `backend` set, on that backend's own queue, no outputs
 *   (their workflow calls `collectOutputs`).
 */
export interface RunPromptInput {
  /** Legacy shape only: the backend chosen when the render started. */
  backend?: Backend;
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
  model?: string;
  /** Current shape: store the outputs (with the request's infotext) and return their references. */
  request?: RenderRequest;
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
  phase?: 'starting' | 'sampling' | 'decoding' | 'saving';
}

/** What `buildGraph` returns; built by the front instead in `start` mode (the workflow's second argument). */
export interface BuiltRender {
  plan: RenderPlan;
  limits: RenderLimits;
}

export interface RenderActivities {
  buildGraph(input: { request: RenderRequest; renderId: string }): Promise<BuiltRender>;
  chooseBackend(input: { model: string }): Promise<Backend>;
  uploadInputs(input: { backend: Backend; uploads: InputUpload[] }): Promise<void>;
  runPrompt(input: RunPromptInput): Promise<PromptRun>;
  collectOutputs(input: { backend: Backend; files: ComfyFileRef[]; request: RenderRequest; itemIndex: number }): Promise<BlobRef[]>;
  /**
   * Stop whatever ComfyUI may still run for attempts 1..attempts of an item (cancel while running, dequeue
   * while pending, no-op once finished or unknown). Used when a render ends — cancelled, or out of
   * attempts/time — while an attempt's prompt may have been left running for a re-attach that never comes.
   */
  stopPrompts(input: StopPromptsInput): Promise<void>;
}

export interface StopPromptsInput {
  /** Legacy shape: the render's one backend. */
  backend?: Backend;
  /** Current shape: the backend of each attempt 1..n ('' = unknown: look on every backend). */
  attemptBackends?: string[];
  item: number;
  attempts: number;
}

/** The retention workflow's one activity: `renders prune --older-than RENDER_RETENTION_DAYS`, by the worker. */
export interface RetentionActivities {
  pruneExpired(): Promise<RetentionRunResult>;
}

/** What a retention run records in its history: the prune's result, with at most 100 of the ids deleted. */
export interface RetentionRunResult extends PruneResult {
  rendersDeletedCount: number;
}
