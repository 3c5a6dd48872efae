/**
 * Qwen-Image: txt2img, img2img and inpaint with real CFG and a negative prompt. The model's sigma schedule is
 * patched with ModelSamplingAuraFlow (shift from the profile, 3.1 for Qwen-Image as in ComfyUI's template).
 */
import type { ComfyGraph } from '../../../comfyui/graph.ts';
import type { NodeLink } from '../../../comfyui/graph.ts';
import type { FamilySampling } from '../sampling-facts.ts';
import {
  GraphBuilder,
  loadSingleClip,
  applyLoras,
  loadUnet,
  loadVae,
  sampleDecodeSave,
  sourceLatent,
  type BuildInput,
  type FamilyBuilder,
  type SilentStagePriors,
} from '../common.ts';
import { applyQwenControls, QWEN_PATCH_ROLES } from '../controls.ts';

/** Qwen2.5-VL 7B text encoder (the full vision-language one: edit needs its vision tower) and the Qwen VAE. */
export const QWEN_SHARED_FILES = {
  textEncoder: 'qwen_2.5_vl_7b_fp8_scaled.safetensors',
  vae: 'qwen_image_vae.safetensors',
} as const;

export const QWEN_FILE_ROLES = ['unet', 'textEncoder', 'vae'] as const;

/** Qwen-Image DiffSynth ControlNet model patches (the names of ComfyUI's Qwen-Image ControlNet templates). */
export const QWEN_CONTROL_FILES = {
  diffsynthCanny: 'qwen_image_canny_diffsynth_controlnet.safetensors',
  diffsynthDepth: 'qwen_image_depth_diffsynth_controlnet.safetensors',
  diffsynthInpaint: 'qwen_image_inpaint_diffsynth_controlnet.safetensors',
} as const;

/** Text encoder `type` for Qwen: core CLIPLoader and CLIPLoaderGGUF both take it (DualCLIPLoader has none). */
export const QWEN_CLIP_TYPE = 'qwen_image';

const QWEN_DEFAULT_SHIFT = 3.1;

export function qwenBase(g: GraphBuilder, input: BuildInput) {
  const { profile } = input;
  const unet = loadUnet(g, profile);
  const sampling = g.add('model_sampling', 'ModelSamplingAuraFlow', 'Model sampling shift', {
    model: unet,
    shift: profile.defaults.shift ?? QWEN_DEFAULT_SHIFT,
  });
  // LoRAs patch weights; ComfyUI applies them under the sampling-shift patch whichever comes first.
  const { model, clip } = applyLoras(g, profile, input.request.loras, sampling, loadSingleClip(g, profile, QWEN_CLIP_TYPE));
  const vae = loadVae(g, profile);
  return { model, clip, vae };
}

/** Qwen2.5-VL 7B as the text encoder; the Qwen-Image VAE (Wan 2.1's) is slower than Flux's. */
export const QWEN_SILENT_STAGES: SilentStagePriors = { encodeMs: 5_000, decodeMsPerUnit: 1_000 };

/** Qwen-Image is flow-matching on a 16-channel latent; ComfyUI fits Optimal Steps to FLUX, Wan and Chroma, not to Qwen. */
export const QWEN_SAMPLING: FamilySampling = {
  prediction: 'flow',
  emptyLatent: 'EmptySD3LatentImage',
  alignYourSteps: { node: 'OptimalStepsScheduler', modelType: 'FLUX' },
  alignYourStepsNote:
    "ComfyUI's Align Your Steps/GITS tables are for SD1/SDXL/SVD noise levels and it fits Optimal Steps to FLUX, Wan and Chroma only; this flow-matching model runs OptimalStepsScheduler (FLUX), the nearest",
};

export const qwenBuilder: FamilyBuilder = {
  family: 'qwen',
  fileRoles: [...QWEN_FILE_ROLES, ...new Set(Object.values(QWEN_PATCH_ROLES))],
  optionalFileRoles: [...new Set(Object.values(QWEN_PATCH_ROLES))],
  sampling: QWEN_SAMPLING,
  kinds: ['txt2img', 'img2img'],
  silentStages: QWEN_SILENT_STAGES,
  build(input: BuildInput): ComfyGraph {
    const { request } = input;
    const g = new GraphBuilder();
    const base = qwenBase(g, input);
    const { clip, vae } = base;
    const model = applyQwenControls(g, input, { model: base.model, vae });
    const positive: NodeLink = g.add('positive', 'CLIPTextEncode', 'Prompt', { text: request.prompt, clip });
    const negative = g.add('negative', 'CLIPTextEncode', 'Negative prompt', { text: request.negativePrompt, clip });
    const latent = sourceLatent(g, input, vae, QWEN_SAMPLING);
    sampleDecodeSave(g, input, { model, positive, negative, latent, vae });
    return g.graph();
  },
};

export default qwenBuilder;
