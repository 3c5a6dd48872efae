/**
 * What the service knows about one model: capabilities, defaults, file names and limits. One small file per
 * model in `profiles/`, found by the registry from the directory listing; models of the same family share a
 * graph builder (`families/`), so a new model of an existing family is one new file and nothing else.
 */
import type { RenderKind, VideoTask } from '../contracts/render.ts';
import type { SglangEngineSpec } from './engines/sglang/spec.ts';

/**
 * Graph builder shared by models of one family (the folder `families/<family>/`, found by `families/index.ts`). Open:
 * the registry checks at load that every profile's family has a builder that renders what it claims.
 */
export type ModelFamily = string;

/**
 * How the sampler's CFG is chosen.
 * - `fixed-1`: guidance-distilled (Flux): cfg is always 1, so there is no negative branch; the client's
 *   `cfg_scale` and `negative_prompt` are ignored with a warning.
 * - `free`: real classifier-free guidance with a negative prompt (Qwen).
 */
export type CfgMode = 'fixed-1' | 'free';

export interface ModelDefaults {
  steps: number;
  cfg: number;
  /** FluxGuidance value. Absent: the model has no guidance embedding (schnell, Qwen). */
  guidance?: number;
  /** ComfyUI sampler and scheduler names. */
  sampler: string;
  scheduler: string;
  width: number;
  height: number;
  /** ModelSamplingAuraFlow shift, for families that patch the model's sigma schedule. */
  shift?: number;
}

export interface ModelProfile {
  /** Stable id used in requests, history and infotexts, e.g. `imagegen-flux-dev`. */
  id: string;
  /** Shown by `GET /sdapi/v1/sd-models` and accepted back as a model name. */
  title: string;
  /** Further accepted names (matched case-insensitively). */
  aliases: readonly string[];
  family: ModelFamily;
  /**
   * Kinds this model renders. `edit` = instruction edit: `extra_images` are reference conditioning and the
   * prompt is the instruction. An edit-only model must never receive a plain img2img (it would silently
   * ignore the instruction semantics), so requests are routed by this list.
   */
  kinds: readonly RenderKind[];
  defaults: ModelDefaults;
  cfgMode: CfgMode;
  /** Latent grid in pixels: requested sizes snap to a multiple of this. */
  grid: number;
  minSide: number;
  maxSide: number;
  maxPixels: number;
  /** Reference images an edit accepts (0 for models without edit). */
  maxExtraImages: number;
  /**
   * Model files by role (`unet`, `t5`, `clipL`, `textEncoder`, `vae`, ...; the family builder declares which
   * roles it reads). Operators override them through the overrides file without code changes.
   */
  files: Readonly<Record<string, string>>;
  /** No progress event for this long = stalled. Must exceed the slowest silent node (model load). */
  stallTimeoutMs: number;
  /** Overall limit for one output item (one ComfyUI prompt), retries included. */
  deadlineMs: number;
  /** Video models only (kind `video`): frame grid, lengths, frame rates and tasks. */
  video?: VideoCapabilities;
  /** What renders the diffusion model (absent = `comfyui`); operators choose it per model (see `engines/`). */
  engine?: Engine;
  /** What the `sglang` engine needs for this model. Absent: the model cannot run on that engine. */
  sglang?: SglangEngineSpec;
}

/**
 * An engine id: what renders the diffusion model, a folder `engines/<id>/` (`comfyui`: ComfyUI's own loaders;
 * `sglang`: SGLang's ComfyUI plugin in integrated mode). Open: the registry checks at load that every
 * profile's engine is one of the folders and can run the profile.
 */
export type Engine = string;

/**
 * Frame counts a video model renders: `offset + step·k`. `round` says how a count off the grid moves:
 * `down` = vLLM-Omni's Wan rule floor(n/4)·4+1, `up` = H3's next 17k+5 (docs/video-api.md).
 */
export interface FrameGrid {
  step: number;
  offset: number;
  round: 'down' | 'up';
}

export interface VideoCapabilities {
  frameGrid: FrameGrid;
  /** On the grid. */
  minFrames: number;
  maxFrames: number;
  defaultFrames: number;
  defaultFps: number;
  minFps: number;
  maxFps: number;
  /**
   * Tasks in preference order, ids of the family's `video.tasks` (what each does with images is the
   * family's): the first without images is used when the request has none.
   */
  tasks: readonly VideoTask[];
  /** The MP4 has an audio track (H3: AAC 32 kHz stereo). */
  audio: boolean;
  /** Size when the request has none and no image decides it. */
  imageSize: { mode: 'max-area'; area: number } | { mode: 'short-edge'; shortEdge: number };
  /**
   * The API's `num_inference_steps` counts sigma points (vLLM-Omni and SGLang for H3: an 8-step turbo is
   * requested as 9), ComfyUI's BasicScheduler counts steps: the front subtracts one.
   */
  sigmaPointSteps: boolean;
}

/**
 * Limits shared by the image models: 64..2048 px per side and at most 1536² = 2048×1152 pixels. Flux and
 * Qwen are trained up to about 2 MP; beyond that quality drops while GPU time keeps growing.
 */
export const IMAGE_SIZE_LIMITS = { grid: 16, minSide: 64, maxSide: 2048, maxPixels: 1536 * 1536 } as const;

/**
 * Stall timeout of the image profiles (stall ≠ slow, docs/durability.md). It must exceed the longest SILENT node:
 * ComfyUI sends no event while a node loads weights, and the GGUF loaders map files lazily, so the biggest
 * single read happens at the sampler's start — the ~20 GB Qwen-Image Q8 unet (Flux Q8 is ~13 GB). 180 s
 * covers 20 GB at 115 MB/s, i.e. a slow HDD or network share with a cold page cache (NVMe does it in ~10 s);
 * sampler steps and node starts are events and reset the clock. And it keeps a hang cheap: interrupted at
 * ~3 min (+ at most 2 × 15 s of interrupt/free escalation), the retry starts well before the 10-minute mark
 * at which the old shim's clients gave up, leaving it ~6 min to reload and render.
 */
export const IMAGE_STALL_TIMEOUT_MS = 180_000;

/**
 * Stall timeout of the video profiles. A video prompt is silent for minutes in normal operation: loading a
 * 10 GB diffusion model plus a 6-30 GB text encoder from a cold cache, the text encode of a large VL model,
 * and above all the VAE decode of a hundred-plus frames (no progress events; the real CPU run of a tiny
 * H3 spent 55 s there, a full-size 1344×768×124 decode takes minutes on a GPU). 10 minutes covers that
 * with margin while still catching a hung node long before the deadline.
 */
export const VIDEO_STALL_TIMEOUT_MS = 600_000;

/** A1111 clients send 512×512-era defaults; size-less requests render 512×512. */
export const DEFAULT_SIZE = { width: 512, height: 512 } as const;
