import { DEFAULT_SIZE, IMAGE_SIZE_LIMITS, IMAGE_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';
import { FLUX_TEXT_FILES } from '../families/flux/index.ts';

/** Instruction edit only: references arrive as `extra_images`, stitched side by side (up to 4). */
export const fluxKontext: ModelProfile = {
  id: 'imagegen-flux-kontext',
  title: 'FLUX.1-Kontext-dev',
  aliases: ['flux-kontext', 'flux1-kontext', 'flux1-kontext-dev', 'flux.1-kontext-dev', 'kontext'],
  family: 'flux-kontext',
  // txt2img: plain text-to-image through the same model (standard A1111 clients), no reference.
  kinds: ['edit', 'txt2img'],
  defaults: { steps: 20, cfg: 1, guidance: 2.5, sampler: 'euler', scheduler: 'simple', ...DEFAULT_SIZE },
  cfgMode: 'fixed-1',
  ...IMAGE_SIZE_LIMITS,
  maxExtraImages: 4,
  files: { unet: 'flux1-kontext-dev-Q8_0.gguf', ...FLUX_TEXT_FILES },
  stallTimeoutMs: IMAGE_STALL_TIMEOUT_MS,
  deadlineMs: 900_000,
};

export default fluxKontext;
