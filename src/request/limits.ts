/**
 * The limits every protocol shares, whatever its field names: one place, so the A1111, OpenAI and video
 * adapters (and the ones to come) refuse the same values the same way.
 */
import type { Config } from '../config/config.ts';

/** Seeds and seed + i must stay exactly representable in JavaScript (and thus in history JSON). */
export const MAX_SEED = Number.MAX_SAFE_INTEGER;
/** A random seed is drawn from 0..4294967293, A1111's range (clients show and re-send it as a 32-bit number). */
export const RANDOM_SEED_BOUND = 4294967294;
/** A1111's UI maximum; more is almost always a client mistake that would hold a GPU for long. */
export const MAX_STEPS = 150;
/** A1111's img2img default: the layout of the init image survives. */
export const DEFAULT_DENOISE = 0.75;
/**
 * Prompts are copied into every item's graph and into workflow history: without a cap, a batch of long
 * prompts would exceed Temporal's 2 MB payload limit. 16 KiB is far beyond what text encoders read (T5 takes
 * 512 tokens) while fitting any real prompt.
 */
export const MAX_PROMPT_CHARS = 16 * 1024;

export interface ResolveLimits {
  maxImageBytes: number;
  maxImagePixels: number;
  /** Most output images per request (batch size × iterations). */
  maxBatch: number;
  /** Most reference images per edit (the model's own limit may be lower). */
  maxExtraImages: number;
  /** Pixel budget of one output image; absent: the model's own `maxPixels`. */
  maxRenderPixels?: number;
}

/** The limits a front's configuration sets, for every protocol that resolves a render request. */
export function resolveLimits(
  config: Pick<Config, 'MAX_IMAGE_BYTES' | 'MAX_IMAGE_PIXELS' | 'MAX_BATCH' | 'MAX_EXTRA_IMAGES' | 'MAX_RENDER_PIXELS'>,
): ResolveLimits {
  return {
    maxImageBytes: config.MAX_IMAGE_BYTES,
    maxImagePixels: config.MAX_IMAGE_PIXELS,
    maxBatch: config.MAX_BATCH,
    maxExtraImages: config.MAX_EXTRA_IMAGES,
    ...(config.MAX_RENDER_PIXELS !== undefined ? { maxRenderPixels: config.MAX_RENDER_PIXELS } : {}),
  };
}
