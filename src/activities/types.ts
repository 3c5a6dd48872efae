/** Activity signatures shared by the workflow (type-only import) and the activity implementations. */
import type { ComfyFileRef, ComfyGraph } from '../comfyui/graph.ts';
import type { Backend, BlobRef, InputUpload, PromptRun, RenderPlan, RenderRequest } from '../render/types.ts';

export interface RenderLimits {
  stallTimeoutMs: number;
  deadlineMs: number;
  heartbeatTimeoutMs: number;
  maxAttempts: number;
}

export interface RunPromptInput {
  backend: Backend;
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
}

export interface RenderActivities {
  buildGraph(input: { request: RenderRequest; renderId: string }): Promise<{ plan: RenderPlan; limits: RenderLimits }>;
  chooseBackend(input: { model: string }): Promise<Backend>;
  uploadInputs(input: { backend: Backend; uploads: InputUpload[] }): Promise<void>;
  runPrompt(input: RunPromptInput): Promise<PromptRun>;
  collectOutputs(input: { backend: Backend; files: ComfyFileRef[]; request: RenderRequest; itemIndex: number }): Promise<BlobRef[]>;
  /**
   * Stop whatever ComfyUI may still run for attempts 1..attempts of an item (cancel while running, dequeue
   * while pending, no-op once finished or unknown). Used when a render ends — cancelled, or out of
   * attempts/time — while an attempt's prompt may have been left running for a re-attach that never comes.
   */
  stopPrompts(input: { backend: Backend; item: number; attempts: number }): Promise<void>;
}
