/**
 * The contracts that cross the Temporal boundary: what the front resolves, what the workflow records in
 * history and what it returns. Plain data only (no classes, no bytes): history is for people to read and
 * Temporal rejects payloads over ~2 MB, so images are always passed as blob references.
 */
import type { ComfyFileRef, ComfyGraph } from '../comfyui/graph.ts';

/** A content-addressed blob (see src/blobs). */
export interface BlobRef {
  sha256: string;
  size: number;
  mime: string;
  width?: number;
  height?: number;
}

/** `txt2img` and `img2img` (init image, optional mask) and `edit` (instruction edit with reference images). */
export type RenderKind = 'txt2img' | 'img2img' | 'edit';

/**
 * A fully resolved, normalised render: every default applied, the seed fixed, the sampler mapped to
 * ComfyUI's name, the size snapped to the model's grid. History shows exactly what will be rendered, and a
 * replay of this object renders the same bytes.
 */
export interface RenderRequest {
  kind: RenderKind;
  /** Profile id, e.g. `imagegen-flux-dev`. */
  model: string;
  prompt: string;
  /** Empty when the model's graph has no negative branch (it is then logged and ignored by the front). */
  negativePrompt: string;
  /** First seed; item i renders with `seed + i`. Always within 0..2^53-1. */
  seed: number;
  steps: number;
  /** Classifier-free guidance scale sent to the sampler (1 for distilled models such as Flux). */
  cfg: number;
  /** Flux guidance (FluxGuidance node), when the family has one. */
  guidance?: number;
  /** ComfyUI sampler and scheduler names (already mapped from A1111 names). */
  sampler: string;
  scheduler: string;
  width: number;
  height: number;
  /** Total number of output images = batchSize * nIter; each item is its own ComfyUI prompt. */
  batchSize: number;
  nIter: number;
  /** img2img denoising strength (1 for txt2img and edit). */
  denoise: number;
  initImage?: BlobRef;
  /** White = repaint. */
  mask?: BlobRef;
  /** Reference images for edit models. */
  extraImages: BlobRef[];
  /** Labels to report back to A1111 clients (e.g. sampler "Euler a"), not used for rendering. */
  report: { samplerName: string; scheduler: string; requestedWidth: number; requestedHeight: number };
  /** Set when this render re-runs an earlier one. */
  replayOf?: string;
}

/** One ComfyUI prompt per output item. */
export interface RenderItem {
  index: number;
  seed: number;
  graph: ComfyGraph;
}

/** Output of the `buildGraph` activity: recorded in history so operators see the exact graphs. */
export interface RenderPlan {
  items: RenderItem[];
  /** Blobs the graphs reference through LoadImage, with the ComfyUI input name each is uploaded under. */
  uploads: InputUpload[];
  /** Output node id whose images are the render's result. */
  outputNode: string;
}

export interface InputUpload {
  blob: BlobRef;
  /** Name as referenced by LoadImage (`subfolder/filename`). Content-addressed, so re-uploads are no-ops. */
  subfolder: string;
  filename: string;
}

export interface Backend {
  id: string;
  url: string;
  /** Task queue whose single slot runs prompts on this ComfyUI. */
  taskQueue: string;
}

export interface PromptRun {
  promptId: string;
  attempt: number;
  files: ComfyFileRef[];
  startedAt: number;
  finishedAt: number;
  /** Current shape: the backend the prompt ran on (bound when the attempt started). */
  backend?: string;
  /** Current shape: the item's outputs in the blob store (images, or videos for a video kind). */
  outputs?: BlobRef[];
  /** Current shape: where the attempt's time went (upload, prompt, outputs), in ms. */
  timings?: StageTiming[];
}

export interface StageTiming {
  stage: string;
  ms: number;
}

export interface RenderResult {
  renderId: string;
  outputs: BlobRef[];
  seeds: number[];
  request: RenderRequest;
  backend: string;
  promptIds: string[];
  timings: StageTiming[];
}
