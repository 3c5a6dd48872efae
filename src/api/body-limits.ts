/**
 * Per-route body size limits: each route reads at most what it can use. A route without images takes
 * JSON_BODY_LIMIT_BYTES (1 MiB: the longest prompt, settings and script arguments); a route with images takes
 * what its images may be in base64 (4/3 of MAX_IMAGE_BYTES each) plus that, never more than BODY_LIMIT_BYTES.
 * A body over its route's limit is refused (413) as it arrives, before it is parsed.
 */
import type { Config } from '../config/config.ts';

type LimitConfig = Pick<Config, 'JSON_BODY_LIMIT_BYTES' | 'BODY_LIMIT_BYTES' | 'MAX_IMAGE_BYTES'>;

/** The body limit of a route that takes up to `images` images. */
export function bodyLimitFor(config: LimitConfig, images: number): number {
  const base64 = Math.ceil(config.MAX_IMAGE_BYTES / 3) * 4 + 256;
  return Math.min(config.BODY_LIMIT_BYTES, Math.max(config.JSON_BODY_LIMIT_BYTES, config.JSON_BODY_LIMIT_BYTES + images * base64));
}

/** Images each image route can use (what A1111 and the video API let a request carry). */
export function imageRouteLimits(config: LimitConfig & Pick<Config, 'MAX_EXTRA_IMAGES' | 'MAX_BATCH'>) {
  return {
    /** `extra_images` (an instruction edit) only. */
    txt2img: bodyLimitFor(config, config.MAX_EXTRA_IMAGES),
    /** The init image, the mask and the references. */
    img2img: bodyLimitFor(config, 2 + config.MAX_EXTRA_IMAGES),
    pngInfo: bodyLimitFor(config, 1),
    extraSingle: bodyLimitFor(config, 1),
    extraBatch: bodyLimitFor(config, config.MAX_BATCH),
    /** input_reference and input_references (as many as a multipart body may carry files). */
    video: bodyLimitFor(config, VIDEO_MAX_FILES),
  };
}

/** Most files in one multipart video body. */
export const VIDEO_MAX_FILES = 16;
