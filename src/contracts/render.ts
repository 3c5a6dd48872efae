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
  /**
   * An output image of one colour: `black` is what a VAE that produced NaNs decodes to (A1111 raises "A
   * tensor with all NaNs was produced in VAE"); recorded in the render's result so operators find it.
   */
  blank?: 'black' | 'uniform';
}

/**
 * What a render does, and which `RenderRequest` member carries it (`kind` is the discriminant):
 * - `txt2img` and `img2img` (init image, optional mask), `edit` (instruction edit with reference images): a
 *   diffusion model samples images (`ImageRender`);
 * - `upscale` (A1111 extras: each of `extraImages` enlarged), `preprocess` (a ControlNet preprocessor run on each
 *   of `extraImages`), `segment` (background removal or text segmentation of `extraImages`): ComfyUI graphs over
 *   the client's images with no model sampling (`UpscaleRender`, `PreprocessRender`, `SegmentRender`);
 * - `video`: one MP4 per render (`VideoRender`, the details in its `video`);
 * - `prompt`: a client's own API-format graph, run as it is (`PromptRender`, the graph in its `graph`).
 */
export type RenderKind = RenderRequest['kind'];

/** The kinds a diffusion model samples images for (`ImageRender`). */
export type ImageKind = 'txt2img' | 'img2img' | 'edit';

/**
 * A `prompt` render: an API-format graph a client wrote itself (ComfyUI's own API, a workflow file). The
 * other request fields of such a render only summarise the graph (its first sampler's seed, steps, size) for
 * listings and the memo; the graph is what runs, with each save node's `filename_prefix` made unique per
 * render and the uploads the graph names bound to blobs (renders/prompt-plan.ts).
 */
export interface GraphSpec {
  /** The graph as the client sent it. */
  graph: ComfyGraph;
  /** Images the graph names by their upload name (`<sha256>.<ext>`, as the front's upload routes answer). */
  inputs: BlobRef[];
  /** The entry point's own id for the render (ComfyUI's `prompt_id`), when it has one. */
  promptId?: string;
  /** ComfyUI `client_id`: whose WebSocket gets the render's events. */
  clientId?: string;
  /** ComfyUI `number`, as sent (its priority was mapped onto the render's). */
  number?: number;
}

/**
 * What a video render conditions on: a task id its family declares (`VideoTaskSpec` in src/models), e.g.
 * Wan's `t2v` / `i2v` (a start image), MiniMax-H3's `t2va`, `fl2va` (first/last frame), `ref2va` (references).
 */
export type VideoTask = string;

/** The video part of a resolved render: frame count already on the model's grid. */
export interface VideoSpec {
  task: VideoTask;
  /** Frames to render, snapped to the model's grid (Wan 4k+1, H3 17k+5). */
  frames: number;
  fps: number;
  /** Sigma shift (Wan ModelSamplingSD3 / H3 video shift); absent = the model's built-in schedule. */
  shift?: number;
  /** H3 audio sigma shift; only set together with `shift`. */
  audioShift?: number;
  firstFrame?: BlobRef;
  lastFrame?: BlobRef;
  /** H3 `ref2va` reference images, in prompt order (`<Picture 1>` = the first). */
  references: BlobRef[];
  /** What the client asked for, reported back beside the snapped values. */
  requested: { frames?: number; seconds?: string; width?: number; height?: number };
}

/**
 * A fully resolved, normalised render: every default applied, the seed fixed, the sampler mapped to
 * ComfyUI's name, the size snapped to the model's grid. History shows exactly what will be rendered, and a
 * replay of this object renders the same bytes. One member per kind, discriminated by `kind`; each carries only
 * its own fields. Histories recorded before the union (docs/versioning.md) also carry the image fields the other
 * kinds once filled with placeholders (`prompt: ''`, `denoise`, `report`, ...): nothing reads those any more.
 */
export type RenderRequest = ImageRender | VideoRender | PromptRender | UpscaleRender | PreprocessRender | SegmentRender;

/** What every render has, whatever its kind. */
export interface RenderBase {
  /** Profile id, e.g. `imagegen-flux-dev`; a render without a model of its own (upscale, ...) names the default one, which lends its time limits. */
  model: string;
  /** First seed; item i renders with `seed + i`. Always within 0..2^53-1; 0 for the kinds that do not sample. */
  seed: number;
  /** Output size (a video's frame size; a graph's first size; the first image of an upscale, preprocess or segment). */
  width: number;
  height: number;
  /** Total number of output items = batchSize * nIter; each item is its own ComfyUI prompt. */
  batchSize: number;
  nIter: number;
  /** Set when this render re-runs an earlier one. */
  replayOf?: string;
  /** Output image format (A1111 `samples_format` and its quality options); absent: PNG. */
  output?: OutputFormat;
}

/** The fields of a render a diffusion model samples (image and video). */
export interface SampledRender extends RenderBase {
  prompt: string;
  /** Empty when the model's graph has no negative branch (it is then logged and ignored by the front). */
  negativePrompt: string;
  steps: number;
  /** Classifier-free guidance scale sent to the sampler (1 for distilled models such as Flux). */
  cfg: number;
  /** ComfyUI sampler and scheduler names (already mapped from A1111 names). */
  sampler: string;
  scheduler: string;
}

/** `txt2img`, `img2img` and `edit`: images sampled by a diffusion model. */
export interface ImageRender extends SampledRender {
  kind: ImageKind;
  /** Flux guidance (FluxGuidance node), when the family has one. */
  guidance?: number;
  /** A sigma-node schedule (SamplerCustomAdvanced) replacing `scheduler` in the first pass. */
  sigmas?: SigmaSchedule;
  /** img2img denoising strength (1 for txt2img and edit). */
  denoise: number;
  initImage?: BlobRef;
  /** White = repaint. */
  mask?: BlobRef;
  /** Inpaint (img2img with a mask): how the result is pasted into the original (A1111 `mask_blur`, px). */
  inpaint?: { maskBlur: number };
  /** Reference images for edit models. */
  extraImages: BlobRef[];
  /** Labels to report back to A1111 clients (e.g. sampler "Euler a"), not used for rendering. */
  report: { samplerName: string; scheduler: string; requestedWidth: number; requestedHeight: number };
  /** `<lora:name:weight>` prompt tags, resolved to ComfyUI's lora files, applied in order (LoraLoader). */
  loras?: LoraUse[];
  /** txt2img hires fix: a second sampling pass at the upscaled size. */
  hires?: HiresFix;
  /** img2img A1111 resize_mode: 0 just resize, 1 crop and resize, 2 resize and fill, 3 latent upscale. */
  resizeMode?: 0 | 1 | 2 | 3;
  /** img2img A1111 "SD upscale" script: the init image enlarged to the output size by this upscaler. */
  sdUpscale?: SdUpscale;
  /** ControlNet and image-prompt units, applied in order (the front maps a protocol's units to these). */
  controls?: ControlUnit[];
}

/** `video`: one clip; the sampler and scheduler are the model's defaults (the video API has no such fields). */
export interface VideoRender extends SampledRender {
  kind: 'video';
  video: VideoSpec;
}

/**
 * `prompt`: a client's own graph. Its `prompt`, `steps`, `cfg`, `sampler`, `scheduler` (and the base's seed and
 * size) only summarise the graph for listings and the memo (its first sampler's values, its first text); the
 * graph is what runs.
 */
export interface PromptRender extends RenderBase {
  kind: 'prompt';
  graph: GraphSpec;
  prompt: string;
  steps: number;
  cfg: number;
  sampler: string;
  scheduler: string;
}

/** The kinds that run ComfyUI graphs over the client's images with no model sampling: one item per image. */
export interface ImagesRender extends RenderBase {
  /** The client's images, in order. */
  extraImages: BlobRef[];
}

/** `upscale` (A1111 extras): each of `extraImages` enlarged. */
export interface UpscaleRender extends ImagesRender {
  kind: 'upscale';
  upscale: UpscaleSpec;
}

/** `preprocess` (a ControlNet preprocessor run alone): what each of `extraImages` becomes. */
export interface PreprocessRender extends ImagesRender {
  kind: 'preprocess';
  preprocess: PreprocessSpec;
}

/** `segment`: how each of `extraImages` is segmented and which images each gives. */
export interface SegmentRender extends ImagesRender {
  kind: 'segment';
  segment: SegmentSpec;
}

/** The renders a model profile's family builds graphs for (image and video). */
export type ModelRender = ImageRender | VideoRender;

export const isImageRender = (r: RenderRequest): r is ImageRender => r.kind === 'txt2img' || r.kind === 'img2img' || r.kind === 'edit';

/** The render as an image render; an image route's render always is one (its Idempotency-Key fingerprint covers the route). */
export function expectImageRender(r: RenderRequest): ImageRender {
  if (!isImageRender(r)) throw new Error(`expected an image render (txt2img, img2img, edit), got a ${r.kind} render`);
  return r;
}

/** The kinds that run no sampler: ComfyUI graphs over the client's images. */
export const isImagesRender = (r: RenderRequest): r is UpscaleRender | PreprocessRender | SegmentRender =>
  r.kind === 'upscale' || r.kind === 'preprocess' || r.kind === 'segment';

/** A render's prompt text and sampling steps, for listings and the memo: '' and 0 for the kinds that do not sample. */
export function promptSummaryOf(r: RenderRequest): { prompt: string; steps: number } {
  return isImagesRender(r) ? { prompt: '', steps: 0 } : { prompt: r.prompt, steps: r.steps };
}

/** A control unit, protocol-neutral: what the family builders turn into ControlNet / model-patch / Redux nodes. */
export type ControlUnit = ControlNetUnit | ImagePromptUnit;

/**
 * How a ControlNet's image becomes its hint: as sent, ComfyUI's core Canny, inverted (white-on-black lines), or
 * `node`: a preprocessor node the live ComfyUI offers (comfyui_controlnet_aux's depth, lineart, pose, ...), named
 * in the unit's `node`.
 */
export type ControlPreprocessor = 'none' | 'canny' | 'invert' | 'node';

/** A late-bound preprocessor node as the live ComfyUI offered it (src/models/preprocessors.ts). */
export interface PreprocessorNodeUse {
  /** The module name the client sent. */
  module: string;
  classType: string;
  /** Its `resolution` input (the unit's processor_res); absent when the node has none. */
  resolution?: number;
}

/** SetUnionControlNetType's types (ComfyUI 0.33.0), `auto` = the union model decides from the image. */
export const UNION_CONTROL_TYPES = [
  'auto',
  'openpose',
  'depth',
  'hed/pidi/scribble/ted',
  'canny/lineart/anime_lineart/mlsd',
  'normal',
  'segment',
  'tile',
  'repaint',
] as const;
export type UnionControlType = (typeof UNION_CONTROL_TYPES)[number];

export interface ControlNetUnit {
  kind: 'controlnet';
  image: BlobRef;
  preprocessor: ControlPreprocessor;
  /** Canny thresholds (0..1, ComfyUI's scale); only with `preprocessor: 'canny'`. */
  canny?: { low: number; high: number };
  /** Only with `preprocessor: 'node'`. */
  node?: PreprocessorNodeUse;
  /** What the hint shows: picks the union ControlNet's mode or the family's per-type model patch. */
  controlType: UnionControlType;
  /** Weight of the unit (ControlNetApplyAdvanced `strength`). */
  strength: number;
  /** Share of the sampling steps the unit is active in, 0..1 (start < end). */
  start: number;
  end: number;
}

/** An image prompt (A1111's IP-Adapter units): the image's style and content steer the prompt (Flux Redux). */
export interface ImagePromptUnit {
  kind: 'image-prompt';
  image: BlobRef;
  strength: number;
}

/** A sigma schedule node feeding SamplerCustomAdvanced (instead of KSampler's scheduler enum). */
export type SigmaSchedule =
  | { node: 'PolyexponentialScheduler'; sigmaMax: number; sigmaMin: number; rho: number }
  | { node: 'OptimalStepsScheduler'; modelType: 'FLUX' | 'Wan' | 'Chroma' }
  | { node: 'AlignYourStepsScheduler'; modelType: 'SD1' | 'SDXL' | 'SVD' };

export interface LoraUse {
  /** ComfyUI's file name (as its LoraLoader lists it, subfolders included). */
  file: string;
  /** The name as the prompt tag gave it, for infotexts. */
  name: string;
  model: number;
  clip: number;
}

/** How an image is enlarged: a latent resize, a pixel resize method, or an upscale model file. */
export type Upscaler = { kind: 'latent'; method: string } | { kind: 'pixel'; method: string } | { kind: 'model'; model: string };

export interface HiresFix {
  /** Final size (on the model grid). */
  width: number;
  height: number;
  upscaler: Upscaler;
  /** A1111 name of the upscaler, for infotexts. */
  upscalerName: string;
  steps: number;
  denoise: number;
  /** ComfyUI sampler / scheduler of the second pass (A1111 hr_sampler_name, hr_scheduler); absent = the first pass's. */
  sampler?: string;
  scheduler?: string;
  /** Their A1111 labels, for infotexts (set with them). */
  samplerLabel?: string;
  schedulerLabel?: string;
}

export interface SdUpscale {
  /** Output size = init image size × scale (then fitted to the model's grid and budget). */
  scale: number;
  /** A1111's tile overlap: reported in the infotext; one pass over the whole image has no tiles. */
  overlap: number;
  upscaler: Upscaler;
  /** A1111 name of the upscaler, for infotexts. */
  upscalerName: string;
}

export interface OutputFormat {
  format: 'png' | 'jpeg' | 'webp';
  /** JPEG / lossy WebP quality 1..100 (A1111 `jpeg_quality`). */
  quality: number;
  /** A1111 `webp_lossless`. */
  lossless: boolean;
}

export interface UpscaleSpec {
  /** Scale factor (A1111 resize_mode 0), or an exact target size (resize_mode 1). */
  factor?: number;
  width?: number;
  height?: number;
  /** resize_mode 1 with `upscaling_crop`: cover the target and crop the centre. */
  crop: boolean;
  upscaler: Upscaler | { kind: 'none' };
  upscalerName: string;
}

/** A ControlNet hint made from an image, as a render of its own (the extension's `/controlnet/detect`). */
export interface PreprocessSpec {
  preprocessor: ControlPreprocessor;
  /** Canny thresholds (0..1, ComfyUI's scale); only with `preprocessor: 'canny'`. */
  canny?: { low: number; high: number };
  /** Only with `preprocessor: 'node'`. */
  node?: PreprocessorNodeUse;
}

/**
 * What a segmentation finds: the foreground (a background-removal model, ComfyUI's RemoveBackground) or what a
 * text names (SAM3_Detect with the text as its conditioning), each by its model file.
 */
export type SegmentMethod = { kind: 'remove-background'; model: string } | { kind: 'text'; checkpoint: string; text: string; threshold: number };

/**
 * An image a segmentation gives: `mask` (white = found, an inpaint mask as it is), `cutout` (the image with
 * what was not found transparent), `blended` (the image with what was found tinted, to look at).
 */
export type SegmentOutput = 'mask' | 'cutout' | 'blended';

export interface SegmentSpec {
  method: SegmentMethod;
  /** Each image gives these, in order: one item (one prompt, one file) per image and output. */
  outputs: SegmentOutput[];
}

/** One ComfyUI prompt per output item. */
export interface RenderItem {
  index: number;
  seed: number;
  graph: ComfyGraph;
}

/** The graphs of a render, built by its submitter: in history as the workflow's input, so operators see them. */
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
}

export interface PromptRun {
  promptId: string;
  attempt: number;
  files: ComfyFileRef[];
  startedAt: number;
  finishedAt: number;
  /** The backend the prompt ran on (bound when the attempt started). */
  backend: string;
  /** The item's outputs in the blob store (images, or videos for a video kind). */
  outputs: BlobRef[];
  /** Where the attempt's time went (upload, prompt, outputs), in ms. */
  timings: StageTiming[];
  /**
   * The prompt was stopped (interrupt, skip) after `step` of `steps` sampling steps: `outputs` is its last
   * sampler preview brought to the output size, not a finished image.
   */
  partial?: { step?: number; steps?: number };
  /**
   * A `prompt` render: ComfyUI's `outputs` of the prompt, each file entry replaced by `{output: i}` (its blob
   * in `outputs`), other ui values (`animated`, `text`) kept, so the front can answer in ComfyUI's shape.
   */
  ui?: Record<string, Record<string, unknown[]>>;
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
  /** `/sdapi/v1/interrupt` ended the render early: `outputs` are the images finished before it. */
  interrupted?: boolean;
  /** Items `/sdapi/v1/skip` ended early; `seeds` lists only the items that answer with an image. */
  skipped?: number[];
  /** Items stopped by interrupt or skip that answer with their partial image (see `PromptRun.partial`). */
  partial?: PartialItem[];
  /** A `prompt` render: its prompt's outputs per node (`PromptRun.ui`, indexes into `outputs`). */
  ui?: Record<string, Record<string, unknown[]>>;
}

export interface PartialItem {
  item: number;
  /** Sampling steps done of the total, when ComfyUI reported them. */
  step?: number;
  steps?: number;
}
