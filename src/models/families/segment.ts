/**
 * Background removal and text segmentation as ComfyUI 0.33.0 core graphs (the layouts ComfyUI's own templates
 * use; background removal recorded on a real server in test/fixtures/real-comfyui/execution-controlnet-rembg-birefnet.json):
 * - background removal: LoadBackgroundRemovalModel → RemoveBackground → a MASK (1 = foreground);
 * - text segmentation: CheckpointLoaderSimple (a SAM3 checkpoint: model and its text encoder) → CLIPTextEncode
 *   of the text → SAM3_Detect → a MASK (1 = what the text names, the union of the objects found).
 * Each output is its own graph (one item, one SaveImage); the graphs share every node up to the mask, so
 * ComfyUI's cache runs the model once per image on a backend.
 */
import type { ComfyGraph, NodeLink } from '../../comfyui/graph.ts';
import type { SegmentMethod, SegmentOutput } from '../../contracts/render.ts';
import { GraphBuilder, loadImage, OUTPUT_NODE } from './common.ts';

/** The tint of `blended` outputs (0xRRGGBB, EmptyImage's `color`), at half opacity over what was found. */
const BLEND_COLOR = 0x1e90ff;

function findMask(g: GraphBuilder, image: NodeLink, method: SegmentMethod): NodeLink {
  if (method.kind === 'remove-background') {
    const model = g.add('bg_model', 'LoadBackgroundRemovalModel', 'Load background removal model', { bg_removal_name: method.model });
    return g.add('remove', 'RemoveBackground', 'Remove background', { bg_removal_model: model, image });
  }
  const checkpoint = g.add('sam_model', 'CheckpointLoaderSimple', 'Load SAM3', { ckpt_name: method.checkpoint });
  const text = g.add('sam_text', 'CLIPTextEncode', 'What to find', { clip: [checkpoint[0], 1], text: method.text });
  return g.add('detect', 'SAM3_Detect', 'SAM3 detect', {
    model: checkpoint,
    image,
    conditioning: text,
    threshold: method.threshold,
    refine_iterations: 2,
    individual_masks: false,
  });
}

/** One output of one image: LoadImage → the mask → the output image → SaveImage. */
export function buildSegmentGraph(
  method: SegmentMethod,
  output: SegmentOutput,
  source: { name: string; width: number; height: number },
  filenamePrefix: string,
): ComfyGraph {
  const g = new GraphBuilder();
  const image = loadImage(g, 'source', 'Image', source.name);
  const mask = findMask(g, image, method);
  let out: NodeLink;
  if (output === 'mask') {
    out = g.add('mask_image', 'MaskToImage', 'Mask as image', { mask });
  } else if (output === 'cutout') {
    // JoinImageWithAlpha takes ComfyUI's mask convention (1 = transparent): the inverted mask keeps what was found.
    const transparent = g.add('transparent', 'InvertMask', 'Not found', { mask });
    out = g.add('cutout', 'JoinImageWithAlpha', 'Cut-out', { image, alpha: transparent });
  } else {
    const tint = g.add('tint', 'EmptyImage', 'Tint', { width: source.width, height: source.height, batch_size: 1, color: BLEND_COLOR });
    const tinted = g.add('tinted', 'ImageCompositeMasked', 'Tint what was found', {
      destination: image,
      source: tint,
      x: 0,
      y: 0,
      resize_source: false,
      mask,
    });
    out = g.add('blended', 'ImageBlend', 'Blend', { image1: image, image2: tinted, blend_factor: 0.5, blend_mode: 'normal' });
  }
  g.add(OUTPUT_NODE, 'SaveImage', 'Save image', { images: out, filename_prefix: filenamePrefix });
  return g.graph();
}
