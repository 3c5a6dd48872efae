import { DEFAULT_SIZE, IMAGE_SIZE_LIMITS, IMAGE_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';
import { FLUX_DEV_CONTROL_FILES, FLUX_TEXT_FILES } from '../families/flux/index.ts';

export const fluxDev: ModelProfile = {
  id: 'imagegen-flux-dev',
  title: 'FLUX.1-dev',
  aliases: ['flux-dev', 'flux1-dev', 'flux.1-dev', 'flux'],
  family: 'flux',
  kinds: ['txt2img', 'img2img'],
  defaults: { steps: 20, cfg: 1, guidance: 3.5, sampler: 'euler', scheduler: 'simple', ...DEFAULT_SIZE },
  cfgMode: 'fixed-1',
  ...IMAGE_SIZE_LIMITS,
  maxExtraImages: 0,
  files: { unet: 'flux1-dev-Q8_0.gguf', ...FLUX_TEXT_FILES, ...FLUX_DEV_CONTROL_FILES },
  stallTimeoutMs: IMAGE_STALL_TIMEOUT_MS,
  deadlineMs: 900_000,
  sglang: { files: { unet: 'flux1-dev.safetensors' }, options: { model_type: 'flux' } },
};

export default fluxDev;
