/**
 * Flux (dev, schnell): txt2img, img2img and inpaint. Flux is guidance-distilled and runs at CFG 1, so there
 * is no negative branch: the negative is ConditioningZeroOut of the positive (KSampler needs one, CFG 1
 * never evaluates it) and the client's negative prompt is dropped by the front with a warning.
 */
import type { ComfyGraph } from '../../../comfyui/graph.ts';
import type { FamilySampling } from '../sampling-facts.ts';
import {
  GraphBuilder,
  applyLoras,
  loadUnet,
  loadVae,
  requireFile,
  sampleDecodeSave,
  sourceLatent,
  type BuildInput,
  type FamilyBuilder,
  type SilentStagePriors,
} from '../common.ts';
import { applyFluxControls, FLUX_CONTROL_ROLES } from '../controls.ts';

/** Text encoders and VAE every Flux model uses (fp8 T5-XXL + CLIP-L, the Flux autoencoder). */
export const FLUX_TEXT_FILES = {
  t5: 't5xxl_fp8_e4m3fn.safetensors',
  clipL: 'clip_l.safetensors',
  vae: 'ae.safetensors',
} as const;

export const FLUX_FILE_ROLES = ['unet', 't5', 'clipL', 'vae'] as const;

/** T5-XXL (4.7B) and CLIP-L; Flux's 16-channel VAE decodes a megapixel in well under a second. */
export const FLUX_SILENT_STAGES: SilentStagePriors = { encodeMs: 3_000, decodeMsPerUnit: 500 };

/** Flux is flow-matching on a 16-channel latent; ComfyUI fits Optimal Steps to it (its Align Your Steps). */
export const FLUX_SAMPLING: FamilySampling = {
  prediction: 'flow',
  emptyLatent: 'EmptySD3LatentImage',
  alignYourSteps: { node: 'OptimalStepsScheduler', modelType: 'FLUX' },
  alignYourStepsNote:
    "ComfyUI's Align Your Steps/GITS tables are for SD1/SDXL/SVD noise levels; this flow-matching model runs OptimalStepsScheduler (FLUX), their flow-model counterpart",
};

/**
 * Control files of the FLUX.1-dev models (they carry a guidance embedding, so schnell cannot use them): the
 * InstantX Union Pro ControlNet, the Redux style model and the SigLIP encoder Redux reads (ComfyUI's template
 * names). A ComfyUI without them: `npm run contract` names each; a request with such a unit gets a 4xx.
 */
export const FLUX_DEV_CONTROL_FILES = {
  controlnet: 'flux1-dev-controlnet-union-pro.safetensors',
  redux: 'flux1-redux-dev.safetensors',
  clipVision: 'sigclip_vision_patch14_384.safetensors',
} as const;

/** Loaders and text conditioning shared with the Kontext builder. */
export function fluxBase(g: GraphBuilder, input: BuildInput) {
  const { profile, request } = input;
  // DualCLIPLoaderGGUF reads both .gguf and .safetensors encoders, so it fits every override.
  const { model, clip } = applyLoras(
    g,
    profile,
    request.loras,
    loadUnet(g, profile),
    g.add('clip', 'DualCLIPLoaderGGUF', 'Load T5-XXL + CLIP-L', {
      clip_name1: requireFile(profile, 't5'),
      clip_name2: requireFile(profile, 'clipL'),
      type: 'flux',
    }),
  );
  const vae = loadVae(g, profile);
  const text = g.add('positive', 'CLIPTextEncode', 'Prompt', { text: request.prompt, clip });
  // CFG 1 never evaluates the negative; zeroing the positive is ComfyUI's own Flux pattern.
  const negative = g.add('negative', 'ConditioningZeroOut', 'Negative (zeroed: Flux has no negative)', {
    conditioning: text,
  });
  return { model, clip, vae, text, negative };
}

export const fluxBuilder: FamilyBuilder = {
  family: 'flux',
  fileRoles: [...FLUX_FILE_ROLES, ...FLUX_CONTROL_ROLES],
  optionalFileRoles: FLUX_CONTROL_ROLES,
  sampling: FLUX_SAMPLING,
  kinds: ['txt2img', 'img2img'],
  silentStages: FLUX_SILENT_STAGES,
  build(input: BuildInput): ComfyGraph {
    const g = new GraphBuilder();
    const { model, vae, text, negative: zeroed } = fluxBase(g, input);
    const guidance = input.request.guidance;
    // Schnell has no guidance embedding (guidance undefined): no FluxGuidance node, as in its template.
    const guided = guidance === undefined ? text : g.add('guidance', 'FluxGuidance', 'Flux guidance', { conditioning: text, guidance });
    const { positive, negative } = applyFluxControls(g, input, { positive: guided, negative: zeroed, vae });
    const latent = sourceLatent(g, input, vae, FLUX_SAMPLING);
    sampleDecodeSave(g, input, { model, positive, negative, latent, vae });
    return g.graph();
  },
};

export default fluxBuilder;
