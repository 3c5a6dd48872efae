import { DEFAULT_SIZE, IMAGE_SIZE_LIMITS, IMAGE_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';
import { QWEN_CONTROL_FILES, QWEN_SHARED_FILES } from '../families/qwen/index.ts';

export const qwenImage: ModelProfile = {
  id: 'imagegen-qwen-image',
  title: 'Qwen-Image',
  aliases: ['qwen-image', 'qwen_image', 'qwen'],
  family: 'qwen',
  kinds: ['txt2img', 'img2img'],
  defaults: { steps: 40, cfg: 2.5, sampler: 'euler', scheduler: 'simple', shift: 3.1, ...DEFAULT_SIZE },
  cfgMode: 'free',
  ...IMAGE_SIZE_LIMITS,
  maxExtraImages: 0,
  files: { unet: 'qwen-image-Q8_0.gguf', ...QWEN_SHARED_FILES, ...QWEN_CONTROL_FILES },
  sglang: { files: { unet: 'qwen_image_bf16.safetensors' }, options: { model_type: 'qwen_image' } },
  // A 20 GB unet plus a 7B text encoder load silently for a long time on a cold start.
  stallTimeoutMs: IMAGE_STALL_TIMEOUT_MS,
  deadlineMs: 1_200_000,
};

export default qwenImage;
