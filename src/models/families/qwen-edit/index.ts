/**
 * Qwen-Image-Edit(-2509) instruction edit through TextEncodeQwenImageEditPlus: up to three reference images
 * (image1..image3) seen by the VL encoder and, through `vae`, added as reference latents; the prompt is the
 * instruction. The negative is a second TextEncodeQwenImageEditPlus with the negative prompt (empty by
 * default) and the same images, exactly as ComfyUI's official 2509 template does (not ConditioningZeroOut:
 * with CFG 2.5 the negative is evaluated, and the template's unconditional branch still sees the images).
 * The template's CFGNorm node is left out: it is not among the nodes the service validates against.
 */
import type { ComfyGraph, InputValue } from '../../../comfyui/graph.ts';
import { GraphBuilder, loadImage, sampleDecodeSave, sourceLatent, type BuildInput, type FamilyBuilder } from '../common.ts';
import { QWEN_FILE_ROLES, QWEN_SAMPLING, QWEN_SILENT_STAGES, qwenBase } from '../qwen/index.ts';

export const QWEN_EDIT_MAX_IMAGES = 3;

export const qwenEditBuilder: FamilyBuilder = {
  family: 'qwen-edit',
  sampling: QWEN_SAMPLING,
  fileRoles: QWEN_FILE_ROLES,
  kinds: ['edit', 'txt2img'],
  // The 7B vision-language encoder reads the reference images too: twice the text-only encode.
  silentStages: { ...QWEN_SILENT_STAGES, encodeMs: 2 * QWEN_SILENT_STAGES.encodeMs },
  build(input: BuildInput): ComfyGraph {
    const { request, images } = input;
    // txt2img: the same encoder without images (its image inputs are optional) renders text-to-image.
    const min = request.kind === 'txt2img' ? 0 : 1;
    if (images.refs.length < min || images.refs.length > QWEN_EDIT_MAX_IMAGES) {
      throw new Error(`Qwen edit graph needs ${min}..${QWEN_EDIT_MAX_IMAGES} reference images, got ${images.refs.length}`);
    }
    const g = new GraphBuilder();
    const { model, clip, vae } = qwenBase(g, input);
    const imageInputs: Record<string, InputValue> = {};
    images.refs.forEach((name, i) => {
      imageInputs[`image${i + 1}`] = loadImage(g, `ref_${i + 1}`, `Reference image ${i + 1}`, name);
    });
    const positive = g.add('positive', 'TextEncodeQwenImageEditPlus', 'Edit instruction', {
      clip,
      prompt: request.prompt,
      vae,
      ...imageInputs,
    });
    const negative = g.add('negative', 'TextEncodeQwenImageEditPlus', 'Negative prompt', {
      clip,
      prompt: request.negativePrompt,
      vae,
      ...imageInputs,
    });
    // An edit renders from an empty latent of the requested size: the references condition, not initialise.
    const latent = sourceLatent(g, input, vae, QWEN_SAMPLING);
    sampleDecodeSave(g, input, { model, positive, negative, latent, vae });
    return g.graph();
  },
};

export default qwenEditBuilder;
