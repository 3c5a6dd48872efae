/**
 * A ControlNet preprocessor run alone (the ControlNet extension's `/controlnet/detect`): LoadImage → the
 * preprocessor (controls.ts `preprocessImage`: Canny, ImageInvert, or the image as it is) → SaveImage. No model
 * is involved; each image is one item (its own prompt), so a batch is as durable as any render.
 */
import type { ComfyGraph } from '../../comfyui/graph.ts';
import type { PreprocessSpec } from '../../contracts/render.ts';
import { GraphBuilder, loadImage, OUTPUT_NODE } from './common.ts';
import { preprocessImage } from './controls.ts';

export function buildPreprocessGraph(spec: PreprocessSpec, imageName: string, filenamePrefix: string): ComfyGraph {
  const g = new GraphBuilder();
  const image = loadImage(g, 'source', 'Image to preprocess', imageName);
  const out = preprocessImage(g, image, spec, { id: () => 'preprocess', title: 'Preprocessor' });
  g.add(OUTPUT_NODE, 'SaveImage', 'Save image', { images: out, filename_prefix: filenamePrefix });
  return g.graph();
}
