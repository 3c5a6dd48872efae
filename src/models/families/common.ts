/**
 * Pieces every image family shares: a small graph builder that gives each node a readable id and a
 * `_meta.title`, loaders chosen by file type, the img2img/inpaint latent source, and sample → decode → save.
 */
import type { ComfyGraph, NodeLink } from '../../comfyui/graph.ts';
import type { RenderKind } from '../../render/types.ts';
import type { ModelFamily, ModelProfile } from '../profile.ts';
import { GraphBuilder, type BuildInput, type SampleParts } from './graph-builder.ts';
import { hiresPass, initLatent } from './tweaks.ts';
import type { VideoFamily } from './video-family.ts';

export { GraphBuilder, type BuildInput, type SampleParts } from './graph-builder.ts';

/** Node id of the SaveImage node in every image graph: the render's result. */
export const OUTPUT_NODE = 'save';

export interface FamilyBuilder {
  readonly family: ModelFamily;
  /** `files` roles the builder reads; overrides may only name these. */
  readonly fileRoles: readonly string[];
  readonly kinds: readonly RenderKind[];
  /** Video families: the tasks they render and their progress stages. */
  readonly video?: VideoFamily;
  build(input: BuildInput): ComfyGraph;
}

export function requireFile(profile: ModelProfile, role: string): string {
  const name = profile.files[role];
  if (!name) throw new Error(`model ${profile.id}: no file configured for role "${role}"`);
  return name;
}

const isGguf = (file: string): boolean => file.toLowerCase().endsWith('.gguf');

/**
 * GGUF unets need ComfyUI-GGUF's loader; anything else goes through core UNETLoader. Choosing by extension
 * lets an operator swap a GGUF for a safetensors file through the overrides file alone.
 */
export function loadUnet(g: GraphBuilder, profile: ModelProfile): NodeLink {
  const file = requireFile(profile, 'unet');
  return isGguf(file)
    ? g.add('unet', 'UnetLoaderGGUF', 'Load diffusion model (GGUF)', { unet_name: file })
    : g.add('unet', 'UNETLoader', 'Load diffusion model', { unet_name: file, weight_dtype: 'default' });
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
 * - txt2img / edit: an empty 16-channel latent of the requested size (Flux and Qwen are both 16-channel).
 * - img2img: the init image brought to the requested size by A1111's resize_mode (tweaks.ts `initLatent`)
 *   and VAE-encoded; the sampler's `denoise` decides how much changes.
 * - inpaint: additionally a noise mask. The mask is read single-channel with LoadImageMask `red` (white =
 *   repaint): LoadImage's own MASK is derived from alpha and is a 64×64 zero mask for images without alpha.
 *   The front normalises masks to white-on-black greyscale, so red = the mask. ComfyUI scales the noise
 *   mask to the latent size itself.
 */
export function sourceLatent(g: GraphBuilder, input: BuildInput, vae: NodeLink): NodeLink {
  const { request, images } = input;
  if (request.kind !== 'img2img') {
    return g.add('latent', 'EmptySD3LatentImage', 'Empty latent', {
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
  const sampled = g.add('sampler', 'KSampler', 'Sample', {
    model: parts.model,
    positive: parts.positive,
    negative: parts.negative,
    latent_image: parts.latent,
    seed: input.seed,
    steps: request.steps,
    cfg: request.cfg,
    sampler_name: request.sampler,
    scheduler: request.scheduler,
    denoise: request.kind === 'img2img' ? request.denoise : 1,
  });
  const final = request.hires ? hiresPass(g, input, parts, sampled, request.hires) : sampled;
  const decoded = g.add('decode', 'VAEDecode', 'Decode', { samples: final, vae: parts.vae });
  g.add(OUTPUT_NODE, 'SaveImage', 'Save image', { images: decoded, filename_prefix: input.filenamePrefix });
}
