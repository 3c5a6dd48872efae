/**
 * ControlNet, image-prompt, background-removal and segmentation nodes of the fake, as a real ComfyUI 0.33.0 ran
 * them with tiny weights (test/fixtures/real-comfyui/execution-controlnet-*.json, tools/tiny-models/): the
 * preprocessors keep the image's size, masks have the image's size, a cut-out is an RGBA image. Loaders and
 * conditioning nodes (ControlNetLoader, SetUnionControlNetType, ControlNetApplyAdvanced, StyleModelApply, ...)
 * need no entry: their opaque outputs carry a signature of everything upstream, so a unit between the text
 * encoder and the sampler changes the sampler's output, as on the real server.
 */
import type { FakeValue, NodeRunCtx } from './nodes.ts';
import { image, int, need, registerNodes } from './nodes.ts';

function mask(n: NodeRunCtx, i: number, like: { width: number; height: number; count: number }): FakeValue {
  return { kind: 'mask', sig: n.outSig(i), width: like.width, height: like.height, count: like.count };
}

registerNodes({
  // comfy_extras/nodes_canny.py: an edge map of the same size (3 channels).
  Canny: (n) => {
    const img = need(n, 'image', 'image');
    return { outputs: [image(n, 0, img.width, img.height, img.count)] };
  },
  // nodes.py ImageInvert (the `invert` preprocessor): 1 - image, same size.
  ImageInvert: (n) => {
    const img = need(n, 'image', 'image');
    return { outputs: [image(n, 0, img.width, img.height, img.count)] };
  },
  // nodes.py EmptyImage: a solid colour of the asked size (the tint of a segmentation's blended output).
  EmptyImage: (n) => ({ outputs: [image(n, 0, int(n, 'width', 512), int(n, 'height', 512), int(n, 'batch_size', 1))] }),
  // comfy_extras/nodes_post_processing.py ImageBlend: image2 is resized to image1, the output has image1's size.
  ImageBlend: (n) => {
    const img = need(n, 'image1', 'image');
    need(n, 'image2', 'image');
    return { outputs: [image(n, 0, img.width, img.height, img.count)] };
  },
  // comfy_extras/nodes_bg_removal.py: the model's foreground probability, resized back to the image.
  RemoveBackground: (n) => ({ outputs: [mask(n, 0, need(n, 'image', 'image'))] }),
  InvertMask: (n) => ({ outputs: [mask(n, 0, need(n, 'mask', 'mask'))] }),
  // comfy_extras/nodes_compositing.py: RGB + (1 - alpha) as a fourth channel, the image's size, batch of the larger.
  JoinImageWithAlpha: (n) => {
    const img = need(n, 'image', 'image');
    const alpha = need(n, 'alpha', 'mask');
    return { outputs: [{ ...(image(n, 0, img.width, img.height, Math.max(img.count, alpha.count)) as Extract<FakeValue, { kind: 'image' }>), alpha: true }] };
  },
  // comfy_extras/nodes_sam3.py: masks of the image's size (their union unless individual_masks) and the boxes
  // (test/fixtures/real-comfyui/execution-controlnet-sam3-text.json).
  // Its ProgressBar(B) steps once per image (recorded: one `progress` 1/1 for one image).
  SAM3_Detect: async (n) => {
    const img = need(n, 'image', 'image');
    await n.sample(img.count);
    return { outputs: [mask(n, 0, img), { kind: 'opaque', sig: n.outSig(1), type: 'BOUNDING_BOX' }] };
  },
});
