import { DEFAULT_SIZE, IMAGE_SIZE_LIMITS, IMAGE_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';
import { FLUX_TEXT_FILES } from '../families/flux/index.ts';

/** Schnell is timestep-distilled without a guidance embedding: no `guidance`, so no FluxGuidance node. */
export const fluxSchnell: ModelProfile = {
  id: 'imagegen-flux-schnell',
  title: 'FLUX.1-schnell',
  aliases: ['flux-schnell', 'flux1-schnell', 'flux.1-schnell', 'schnell'],
  family: 'flux',
  kinds: ['txt2img', 'img2img'],
  defaults: { steps: 4, cfg: 1, sampler: 'euler', scheduler: 'simple', ...DEFAULT_SIZE },
  cfgMode: 'fixed-1',
  ...IMAGE_SIZE_LIMITS,
  maxExtraImages: 0,
  files: { unet: 'flux1-schnell-Q8_0.gguf', ...FLUX_TEXT_FILES },
  sglang: { files: { unet: 'flux1-schnell.safetensors' }, options: { model_type: 'flux' } },
  stallTimeoutMs: IMAGE_STALL_TIMEOUT_MS,
  deadlineMs: 600_000,
};

export default fluxSchnell;
