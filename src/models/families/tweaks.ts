/**
 * What A1111 users tweak, as ComfyUI graph pieces every image family shares (LoRA stacks are the engine's, engines/): the
 * hires fix (a second sampling pass at the upscaled size), img2img resize modes, and the upscaler chains the
 * hires fix and the extras upscale share. Node inputs follow the recorded real `/object_info`.
 */
import type { NodeLink } from '../../comfyui/graph.ts';
import type { HiresFix, ImageRender, Upscaler } from '../../contracts/render.ts';
import type { BuildInput, GraphBuilder, SampleParts } from './graph-builder.ts';

/**
 * Image → image of exactly `width`×`height` through `upscaler`: a model upscale (UpscaleModelLoader +
 * ImageUpscaleWithModel, at the model's own factor) then an exact resize, or a resize with a pixel method.
 */
export function upscaleImageTo(
  g: GraphBuilder,
  prefix: string,
  image: NodeLink,
  upscaler: Upscaler,
  size: { width: number; height: number; crop?: boolean },
): NodeLink {
  let img = image;
  let method = 'lanczos';
  if (upscaler.kind === 'model') {
    const loader = g.add(`${prefix}_model`, 'UpscaleModelLoader', `Load upscale model ${upscaler.model}`, { model_name: upscaler.model });
    img = g.add(`${prefix}_model_upscale`, 'ImageUpscaleWithModel', 'Upscale with model', { upscale_model: loader, image: img });
  } else {
    method = upscaler.method;
  }
  return g.add(`${prefix}_resize`, 'ImageScale', 'Resize to the target size', {
    image: img,
    upscale_method: method,
    width: size.width,
    height: size.height,
    crop: size.crop ? 'center' : 'disabled',
  });
}

/** The hires fix's second pass: upscale the first pass (in latent space or in pixels) and sample again. */
export function hiresPass(g: GraphBuilder, input: BuildInput, parts: SampleParts, firstPass: NodeLink, hires: HiresFix): NodeLink {
  let latent: NodeLink;
  if (hires.upscaler.kind === 'latent') {
    latent = g.add('hr_upscale', 'LatentUpscale', `Hires upscale (${hires.upscalerName})`, {
      samples: firstPass,
      upscale_method: hires.upscaler.method,
      width: hires.width,
      height: hires.height,
      crop: 'disabled',
    });
  } else {
    const decoded = g.add('hr_decode', 'VAEDecode', 'Decode first pass', { samples: firstPass, vae: parts.vae });
    const scaled = upscaleImageTo(g, 'hr', decoded, hires.upscaler, hires);
    latent = g.add('hr_encode', 'VAEEncode', 'Encode upscaled image', { pixels: scaled, vae: parts.vae });
  }
  const { request } = input;
  return g.add('hr_sampler', 'KSampler', 'Hires second pass', {
    model: parts.model,
    positive: parts.positive,
    negative: parts.negative,
    latent_image: latent,
    seed: input.seed,
    steps: hires.steps,
    cfg: request.cfg,
    sampler_name: hires.sampler ?? request.sampler,
    scheduler: hires.scheduler ?? request.scheduler,
    denoise: hires.denoise,
  });
}

/**
 * The init image of an img2img brought to the output size by A1111's resize_mode:
 * 0 just resize (stretch), 1 crop and resize (cover, centre crop), 2 resize and fill (fit inside, pad the
 * rest; ComfyUI pads grey where A1111 stretches the edge pixels), 3 latent upscale (encode at the init
 * image's own size, resize the latent). Returns the latent to sample from.
 */
export function initLatent(g: GraphBuilder, request: ImageRender, init: NodeLink, vae: NodeLink): NodeLink {
  const { width, height } = request;
  const mode = request.resizeMode ?? 0;
  if (mode === 3) {
    const encoded = g.add('init_latent_raw', 'VAEEncode', 'Encode init image', { pixels: init, vae });
    return g.add('init_latent', 'LatentUpscale', 'Resize init latent', { samples: encoded, upscale_method: 'bilinear', width, height, crop: 'disabled' });
  }
  let pixels: NodeLink;
  const src = request.initImage;
  if (mode === 2 && src?.width && src.height) {
    const fit = Math.min(width / src.width, height / src.height);
    const fw = Math.min(width, Math.max(1, Math.round(src.width * fit)));
    const fh = Math.min(height, Math.max(1, Math.round(src.height * fit)));
    const scaled = g.add('init_scale', 'ImageScale', 'Fit init image inside', {
      image: init,
      upscale_method: 'lanczos',
      width: fw,
      height: fh,
      crop: 'disabled',
    });
    const left = Math.floor((width - fw) / 2);
    const top = Math.floor((height - fh) / 2);
    pixels = g.add('init_fill', 'ImagePadForOutpaint', 'Fill to the output size', {
      image: scaled,
      left,
      top,
      right: width - fw - left,
      bottom: height - fh - top,
      feathering: 0,
    });
  } else if (mode === 0 && request.sdUpscale) {
    // A1111's SD upscale: the init image enlarged by the script's upscaler, then redrawn.
    pixels = upscaleImageTo(g, 'init', init, request.sdUpscale.upscaler, { width, height });
  } else {
    pixels = g.add('init_scale', 'ImageScale', mode === 1 ? 'Crop and resize init image' : 'Resize init image', {
      image: init,
      upscale_method: 'lanczos',
      width,
      height,
      crop: mode === 1 ? 'center' : 'disabled',
    });
  }
  return g.add('init_latent', 'VAEEncode', 'Encode init image', { pixels, vae });
}
