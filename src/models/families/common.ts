/**
 * Pieces every image family shares: a small graph builder that gives each node a readable id and a
 * `_meta.title`, loaders chosen by file type, the img2img/inpaint latent source, and sample → decode → save.
 */
import type { ComfyGraph, NodeLink } from '../../comfyui/graph.ts';
import type { ImageKind, RenderKind, SigmaSchedule } from '../../contracts/render.ts';
import type { ModelFamily, ModelProfile } from '../profile.ts';
import { GraphBuilder, type BuildInput, type SampleParts, type VideoBuildInput } from './graph-builder.ts';
import { isGguf, requireFile } from '../engines/index.ts';
import { hiresPass, initLatent } from './tweaks.ts';
import type { VideoFamily } from './video-family.ts';
import type { FamilySampling } from './sampling-facts.ts';

export { GraphBuilder, type BuildInput, type SampleParts, type VideoBuildInput } from './graph-builder.ts';
// The engine-dependent loaders dispatch to the profile's engine (engines/); builders import them from here with the other pieces.
export { applyLoras, loadUnet, requireFile } from '../engines/index.ts';

/** Node id of the SaveImage node in every image graph: the render's result. */
export const OUTPUT_NODE = 'save';

/** What every family declares beside its graph builder. */
interface FamilyFacts {
  readonly family: ModelFamily;
  /** `files` roles the builder reads; overrides may only name these. */
  readonly fileRoles: readonly string[];
  /** Roles among `fileRoles` a profile may leave unset: the features they serve (control units) are then off. */
  readonly optionalFileRoles?: readonly string[];
  /** Prediction type, empty latent and custom sigma schedules of the family's models (sampling-facts.ts). */
  readonly sampling: FamilySampling;
  /** What the stages without a progress bar are expected to take before a render of the model measured them. */
  readonly silentStages: SilentStagePriors;
}

/** An image family: builds `txt2img`, `img2img` and/or `edit` graphs. */
export interface ImageFamilyBuilder extends FamilyFacts {
  readonly kinds: readonly ImageKind[];
  readonly video?: undefined;
  build(input: BuildInput): ComfyGraph;
}

/** A video family: builds `video` graphs, for the tasks it declares. */
export interface VideoFamilyBuilder extends FamilyFacts {
  readonly kinds: readonly 'video'[];
  /** The tasks it renders and their progress stages. */
  readonly video: VideoFamily;
  build(input: VideoBuildInput): ComfyGraph;
}

/** A family's graph builder; `video` tells the two apart. */
export type FamilyBuilder = ImageFamilyBuilder | VideoFamilyBuilder;

/** Whether the family builds graphs of this kind. */
export function familyBuilds(builder: FamilyBuilder, kind: RenderKind): boolean {
  const kinds: readonly RenderKind[] = builder.kinds;
  return kinds.includes(kind);
}

/**
 * The prior of the silent stages (text encoding, the final decode) of a family's models on a mid-range GPU:
 * the progress of a model's first render on a worker moves against these (src/activities/item-progress.ts),
 * later ones against what earlier renders measured. Set from the encoders' and VAEs' sizes, not measured
 * here; a box far slower (a CPU) still sees progress rise, on a floor that follows the time spent.
 */
export interface SilentStagePriors {
  /** The text encoding of one prompt, ms. */
  encodeMs: number;
  /** The final VAE decode, ms per output megapixel-frame. */
  decodeMsPerUnit: number;
}

/** Single text encoder (Qwen): core CLIPLoader, or CLIPLoaderGGUF for a `.gguf` file (same `type` enum). */
export function loadSingleClip(g: GraphBuilder, profile: ModelProfile, type: string): NodeLink {
  const file = requireFile(profile, 'textEncoder');
  return isGguf(file)
    ? g.add('clip', 'CLIPLoaderGGUF', 'Load text encoder (GGUF)', { clip_name: file, type })
    : g.add('clip', 'CLIPLoader', 'Load text encoder', { clip_name: file, type });
}

export function loadVae(g: GraphBuilder, profile: ModelProfile): NodeLink {
  return g.add('vae', 'VAELoader', 'Load VAE', { vae_name: requireFile(profile, 'vae') });
}

export function loadImage(g: GraphBuilder, id: string, title: string, name: string): NodeLink {
  return g.add(id, 'LoadImage', title, { image: name });
}

/**
 * The latent the sampler starts from.
 * - txt2img / edit: the family's empty latent (`sampling.emptyLatent`) of the requested size.
 * - img2img: the init image brought to the requested size by A1111's resize_mode (tweaks.ts `initLatent`)
 *   and VAE-encoded; the sampler's `denoise` decides how much changes.
 * - inpaint: additionally a noise mask. The mask is read single-channel with LoadImageMask `red` (white =
 *   repaint): LoadImage's own MASK is derived from alpha and is a 64×64 zero mask for images without alpha.
 *   The front normalises masks to white-on-black greyscale, so red = the mask. ComfyUI scales the noise
 *   mask to the latent size itself.
 */
export function sourceLatent(g: GraphBuilder, input: BuildInput, vae: NodeLink, sampling: FamilySampling): NodeLink {
  const { request, images } = input;
  if (request.kind !== 'img2img') {
    if (!sampling.emptyLatent) throw new Error(`the ${input.profile.family} family declares no empty latent`);
    return g.add('latent', sampling.emptyLatent, 'Empty latent', {
      width: request.width,
      height: request.height,
      batch_size: 1,
    });
  }
  if (!images.init) throw new Error('img2img graph without an init image');
  const init = loadImage(g, 'init_image', 'Init image', images.init);
  const encoded = initLatent(g, request, init, vae);
  if (!images.mask) return encoded;
  const mask = g.add('mask', 'LoadImageMask', 'Inpaint mask (white = repaint)', { image: images.mask, channel: 'red' });
  return g.add('noise_mask', 'SetLatentNoiseMask', 'Apply inpaint mask', { samples: encoded, mask });
}

/**
 * KSampler → (hires fix second pass) → VAEDecode → SaveImage (id OUTPUT_NODE). One image per prompt: each
 * item is its own seed.
 */
export function sampleDecodeSave(g: GraphBuilder, input: BuildInput, parts: SampleParts): void {
  const { request } = input;
  const denoise = request.kind === 'img2img' ? request.denoise : 1;
  const sampled = request.sigmas
    ? sampleOnSigmas(g, input, parts, request.sigmas, denoise)
    : g.add('sampler', 'KSampler', 'Sample', {
        model: parts.model,
        positive: parts.positive,
        negative: parts.negative,
        latent_image: parts.latent,
        seed: input.seed,
        steps: request.steps,
        cfg: request.cfg,
        sampler_name: request.sampler,
        scheduler: request.scheduler,
        denoise,
      });
  const final = request.hires ? hiresPass(g, input, parts, sampled, request.hires) : sampled;
  const decoded = g.add('decode', 'VAEDecode', 'Decode', { samples: final, vae: parts.vae });
  const result = request.kind === 'img2img' && input.images.mask && input.images.init ? pasteIntoOriginal(g, input, decoded) : decoded;
  g.add(OUTPUT_NODE, 'SaveImage', 'Save image', { images: result, filename_prefix: input.filenamePrefix });
}

/**
 * The first pass on a sigma-node schedule (A1111's Polyexponential, Align Your Steps): KSampler's parts
 * spelled out for SamplerCustomAdvanced (RandomNoise, CFGGuider, KSamplerSelect, the schedule node). A
 * partial denoise samples the last `denoise` share of a longer schedule, as KSampler does.
 */
function sampleOnSigmas(g: GraphBuilder, input: BuildInput, parts: SampleParts, schedule: SigmaSchedule, denoise: number): NodeLink {
  const { request } = input;
  let sigmas: NodeLink;
  if (schedule.node === 'OptimalStepsScheduler') {
    sigmas = g.add('sigmas', 'OptimalStepsScheduler', 'Schedule (Optimal Steps)', { model_type: schedule.modelType, steps: request.steps, denoise });
  } else if (schedule.node === 'AlignYourStepsScheduler') {
    sigmas = g.add('sigmas', 'AlignYourStepsScheduler', 'Schedule (Align Your Steps)', { model_type: schedule.modelType, steps: request.steps, denoise });
  } else {
    const total = denoise < 1 && denoise > 0 ? Math.round(request.steps / denoise) : request.steps;
    sigmas = g.add('sigmas', 'PolyexponentialScheduler', 'Schedule (Polyexponential)', {
      steps: total,
      sigma_max: schedule.sigmaMax,
      sigma_min: schedule.sigmaMin,
      rho: schedule.rho,
    });
    if (total !== request.steps) {
      g.add('sigmas_split', 'SplitSigmasDenoise', 'Keep the denoised share', { sigmas, denoise });
      sigmas = ['sigmas_split', 1];
    }
  }
  return g.add('sampler', 'SamplerCustomAdvanced', 'Sample', {
    noise: g.add('noise', 'RandomNoise', 'Noise', { noise_seed: input.seed }),
    guider: g.add('guider', 'CFGGuider', 'Guider', { model: parts.model, positive: parts.positive, negative: parts.negative, cfg: request.cfg }),
    sampler: g.add('sampler_select', 'KSamplerSelect', 'Sampler', { sampler_name: request.sampler }),
    sigmas,
    latent_image: parts.latent,
  });
}

/**
 * Inpaint as A1111 does it: the result is the original with the generated pixels pasted in through the mask
 * (blurred by `mask_blur`), so everything outside the mask comes back unchanged (no VAE round trip there).
 * The original is the init image as brought to the output size for the latent (resize_mode), the mask is
 * scaled to that size, blurred as an image (ImageBlur: A1111's Gaussian of sigma = mask_blur) and read back.
 */
function pasteIntoOriginal(g: GraphBuilder, input: BuildInput, generated: NodeLink): NodeLink {
  const { request } = input;
  const { width, height } = request;
  const nodes = g.graph();
  const original: NodeLink = nodes.init_fill
    ? ['init_fill', 0]
    : nodes.init_scale
      ? ['init_scale', 0]
      : g.add('paste_original', 'ImageScale', 'Original at the output size', {
          image: ['init_image', 0],
          upscale_method: 'lanczos',
          width,
          height,
          crop: 'disabled',
        });
  let maskImage = g.add('paste_mask_image', 'MaskToImage', 'Mask as an image', { mask: ['mask', 0] });
  maskImage = g.add('paste_mask_scale', 'ImageScale', 'Mask at the output size', {
    image: maskImage,
    upscale_method: 'bilinear',
    width,
    height,
    crop: 'disabled',
  });
  const blur = request.inpaint?.maskBlur ?? 0;
  if (blur > 0) {
    maskImage = g.add('paste_mask_blur', 'ImageBlur', `Mask blur ${blur}`, {
      image: maskImage,
      blur_radius: Math.min(31, Math.max(1, Math.floor(2.5 * blur + 0.5))),
      sigma: Math.min(10, blur),
    });
  }
  const mask = g.add('paste_mask', 'ImageToMask', 'Paste mask', { image: maskImage, channel: 'red' });
  return g.add('paste', 'ImageCompositeMasked', 'Paste into the original (outside the mask unchanged)', {
    destination: original,
    source: generated,
    x: 0,
    y: 0,
    resize_source: false,
    mask,
  });
}
