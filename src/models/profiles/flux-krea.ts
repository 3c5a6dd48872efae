import { DEFAULT_SIZE, IMAGE_SIZE_LIMITS, IMAGE_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';
import { FLUX_DEV_CONTROL_FILES, FLUX_TEXT_FILES } from '../families/flux/index.ts';

/** FLUX.1-Krea-dev: a FLUX.1-dev fine-tune (same architecture, encoders and VAE); guidance 4.5 as its template. */
const fluxKrea: ModelProfile = {
  id: 'imagegen-flux-krea',
  title: 'FLUX.1-Krea-dev',
  aliases: ['flux-krea', 'flux1-krea-dev', 'flux.1-krea-dev', 'krea'],
  family: 'flux',
  kinds: ['txt2img', 'img2img'],
  defaults: { steps: 20, cfg: 1, guidance: 4.5, sampler: 'euler', scheduler: 'simple', ...DEFAULT_SIZE },
  cfgMode: 'fixed-1',
  ...IMAGE_SIZE_LIMITS,
  maxExtraImages: 0,
  files: { unet: 'flux1-krea-dev-Q8_0.gguf', ...FLUX_TEXT_FILES, ...FLUX_DEV_CONTROL_FILES },
  stallTimeoutMs: IMAGE_STALL_TIMEOUT_MS,
  deadlineMs: 900_000,
};

export default fluxKrea;
