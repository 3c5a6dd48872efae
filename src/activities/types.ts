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
  graph: ComfyGraph;
  stallTimeoutMs: number;
}

/** What `runPrompt` heartbeats: enough for a retried attempt to re-attach, and for live progress. */
export interface PromptHeartbeat {
  backend: string;
  promptId: string;
  node?: string;
  value?: number;
  max?: number;
  lastEventAt: number;
}

export interface RenderActivities {
  buildGraph(input: { request: RenderRequest; renderId: string }): Promise<{ plan: RenderPlan; limits: RenderLimits }>;
  chooseBackend(input: { model: string }): Promise<Backend>;
  uploadInputs(input: { backend: Backend; uploads: InputUpload[] }): Promise<void>;
  runPrompt(input: RunPromptInput): Promise<PromptRun>;
  collectOutputs(input: { backend: Backend; files: ComfyFileRef[]; request: RenderRequest; itemIndex: number }): Promise<BlobRef[]>;
}
