/**
 * The protocol-neutral render request: what a client asked for, in the service's own words, before anything
 * is resolved against a model. Each protocol (src/api/<protocol>) maps its own fields into it once, with
 * `names` saying which client field each came from; one resolver (resolve.ts) turns it into the
 * `RenderRequest` the submission service starts. A protocol never builds another protocol's body.
 *
 * A new capability is a new optional part here (with the field names it reports under), applied by the
 * resolver: the protocols that can express it fill it, the others leave it out.
 */
import type { ImageSource } from '../images/image-set.ts';
import type { OutputFormat, SdUpscale } from '../contracts/render.ts';
import type { FieldNames } from './fields.ts';
import type { ControlUnitAsk } from '../models/families/controls.ts';

export interface NeutralMask {
  source: ImageSource;
  /** The client's convention is black = repaint (A1111 `inpainting_mask_invert: 1`). */
  invert: boolean;
  /** Threshold the mask to black and white (A1111 `mask_round`). */
  round: boolean;
}

/** A second sampling pass at a larger size (A1111's hires fix), as asked; resolved against the first pass. */
export interface HiresAsk {
  /** An exact target side (0 or absent: from the other side's aspect, or from `scale`). */
  resizeX?: number;
  resizeY?: number;
  /** Target = first pass × scale (default 2), when neither side is given. */
  scale?: number;
  upscaler?: string;
  /** Second-pass steps; 0 or absent: the first pass's. */
  steps?: number;
  denoise?: number;
  /** The second pass's own sampler and scheduler; absent: the first pass's. */
  sampler?: string;
  scheduler?: string;
  names: Readonly<Record<'resizeX' | 'resizeY' | 'scale' | 'upscaler' | 'steps' | 'denoise' | 'sampler' | 'scheduler', string>>;
}

/** Enlarge the init image by an upscaler and redraw it (A1111's SD upscale script), already checked by its protocol. */
export interface SdUpscaleAsk {
  spec: SdUpscale;
  names: Readonly<Record<'script' | 'scale' | 'upscaler', string>>;
}

/** A ControlNet or image-prompt unit as a protocol asked for it; the resolver checks it against the model and stores its image. */
export interface NeutralControl {
  unit: ControlUnitAsk;
  /** The unit's hint or prompt image (its `field` is the client's name for it). */
  source: ImageSource;
  /** The client's names: the unit itself (for a refusal), and its step range (reported where the model ignores it). */
  names: Readonly<Record<'unit' | 'start' | 'end', string>>;
}

export interface NeutralImageRequest {
  kind: 'image';
  /** The client's field for each neutral field, for every error and warning. */
  names: FieldNames;
  /** `img2img`: `init` is the image to redraw (or, on an instruction-edit model, the edit source). */
  route: 'txt2img' | 'img2img';
  /** Any name the registry resolves (id, title, alias); absent: the default model. */
  model?: string;
  prompt: string;
  negativePrompt?: string;
  /** Absent or -1: random. */
  seed?: number;
  /** Absent or 0: the model's default. */
  steps?: number;
  cfg?: number;
  /** Distilled guidance (Flux), where the model has it. */
  guidance?: number;
  /** Sampler and scheduler in any name `models/samplers.ts` knows (A1111 labels, ComfyUI names). */
  sampler?: string;
  scheduler?: string;
  width?: number;
  height?: number;
  /** Without width and height: the size of the first image, fitted into the model (OpenAI's `size: auto`). */
  sizeFromImage?: boolean;
  batchSize?: number;
  nIter?: number;
  denoise?: number;
  init?: ImageSource;
  mask?: NeutralMask;
  /** Reference images of an instruction edit, in prompt order. */
  refs: ImageSource[];
  /** How an inpaint is pasted back (A1111 `mask_blur`); absent: the service's default. */
  inpaint?: { maskBlur: number };
  /** img2img resize mode (A1111's 0..3). */
  resizeMode?: 0 | 1 | 2 | 3;
  hires?: HiresAsk;
  sdUpscale?: SdUpscaleAsk;
  output?: OutputFormat;
  /** ControlNet and image-prompt units, in the order they apply. */
  controls?: NeutralControl[];
  /** `<lora:…>` prompt tags: applied, or removed from the prompt unapplied. */
  loraTags: 'apply' | 'strip';
  /** What the protocol took but adjusted or does not apply, said before the resolver's own warnings. */
  warnings: string[];
}
