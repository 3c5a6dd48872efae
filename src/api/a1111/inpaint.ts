/**
 * A1111's inpaint fields: what the graph applies (the paste back through the blurred mask) and, said in
 * `info.warnings`, what it does not. The graph always samples from the original under the mask (A1111's
 * `inpainting_fill` 1, "original") over the whole image (`inpaint_full_res` false).
 */
import type { A1111Body } from './schema.ts';

/** ImageBlur's largest sigma: stronger blurs are capped (said). */
const MAX_BLUR = 10;
/** A1111's default `mask_blur_x` / `mask_blur_y`. */
const DEFAULT_BLUR = 4;

const FILL_NAMES = ['fill', 'original', 'latent noise', 'latent nothing'];

export function chooseInpaint(b: A1111Body, warnings: string[]): { maskBlur: number } {
  let blur: number;
  if (b.mask_blur !== undefined && b.mask_blur !== null) blur = b.mask_blur;
  else {
    const x = b.mask_blur_x ?? DEFAULT_BLUR;
    const y = b.mask_blur_y ?? DEFAULT_BLUR;
    blur = Math.max(x, y);
    if (x !== y) warnings.push(`mask_blur_x/mask_blur_y: ${x} and ${y} differ; the mask is blurred by ${blur} in both directions`);
  }
  blur = Math.max(0, blur);
  if (blur > MAX_BLUR) {
    warnings.push(`mask_blur: ${blur} capped to ${MAX_BLUR} (ComfyUI's ImageBlur limit)`);
    blur = MAX_BLUR;
  }
  const fill = b.inpainting_fill;
  if (fill !== undefined && fill !== null && fill !== 1) {
    const name = FILL_NAMES[fill] ?? String(fill);
    warnings.push(`inpainting_fill: ${fill} (${name}) not applied; the masked area starts from the original image (1, original)`);
  }
  if (b.inpaint_full_res === true) {
    warnings.push('inpaint_full_res: not applied; the whole image is inpainted at the output size (inpaint_full_res_padding unused)');
  }
  return { maskBlur: blur };
}
