import { DEFAULT_SIZE, IMAGE_SIZE_LIMITS, IMAGE_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';
import { QWEN_SHARED_FILES } from '../families/qwen/index.ts';

/**
 * Qwen-Image-Edit-2509. Shift 3 as in ComfyUI's official 2509 template; 40 steps (the template's 20 is
 * ComfyUI's speed choice, the Qwen team uses 50). Needs the full VL text encoder of QWEN_SHARED_FILES: a
 * language-only GGUF encoder fails in the vision projector.
 */
export const qwenImageEdit: ModelProfile = {
  id: 'imagegen-qwen-image-edit',
  title: 'Qwen-Image-Edit-2509',
  aliases: ['qwen-image-edit', 'qwen-image-edit-2509', 'qwen_image_edit', 'qwen-edit'],
  family: 'qwen-edit',
  // txt2img: plain text-to-image through the same model (standard A1111 clients), no reference.
  kinds: ['edit', 'txt2img'],
  defaults: { steps: 40, cfg: 2.5, sampler: 'euler', scheduler: 'simple', shift: 3, ...DEFAULT_SIZE },
  cfgMode: 'free',
  ...IMAGE_SIZE_LIMITS,
  // TextEncodeQwenImageEditPlus has exactly three image inputs.
  maxExtraImages: 3,
  files: { unet: 'qwen-image-edit-2509-Q8_0.gguf', ...QWEN_SHARED_FILES },
  // Same architecture as Qwen-Image: the plugin's auto-detect cannot tell them apart, so the type is named.
  sglang: { files: { unet: 'qwen_image_edit_2509_bf16.safetensors' }, options: { model_type: 'qwen_image_edit' } },
  stallTimeoutMs: IMAGE_STALL_TIMEOUT_MS,
  deadlineMs: 1_200_000,
};

export default qwenImageEdit;
