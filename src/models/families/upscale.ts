/**
 * A1111 extras upscale (`extra-single-image`, `extra-batch-images`) as a ComfyUI graph: LoadImage →
 * (UpscaleModelLoader + ImageUpscaleWithModel) → ImageScaleBy / ImageScale → SaveImage. No diffusion model
 * is involved; each image is one item (its own prompt), so a batch is as durable as any render.
 */
import type { ComfyGraph, NodeLink } from '../../comfyui/graph.ts';
import type { BlobRef, UpscaleSpec } from '../../contracts/render.ts';
import { GraphBuilder, loadImage, OUTPUT_NODE } from './common.ts';
import { upscaleImageTo } from './tweaks.ts';

/** Output size of `source` under `spec` (factor, or an exact size; 0 in one side keeps the aspect). */
export function upscaleTarget(spec: UpscaleSpec, source: { width?: number; height?: number }): { width: number; height: number } | undefined {
  const w = source.width;
  const h = source.height;
  if (spec.factor !== undefined) return w && h ? { width: Math.round(w * spec.factor), height: Math.round(h * spec.factor) } : undefined;
  let tw = spec.width ?? 0;
  let th = spec.height ?? 0;
  if (w && h) {
    if (tw === 0 && th > 0) tw = Math.round((w * th) / h);
    if (th === 0 && tw > 0) th = Math.round((h * tw) / w);
  }
  return tw > 0 && th > 0 ? { width: tw, height: th } : undefined;
}

export function buildUpscaleGraph(spec: UpscaleSpec, source: BlobRef, imageName: string, filenamePrefix: string): ComfyGraph {
  const g = new GraphBuilder();
  const image = loadImage(g, 'source', 'Image to upscale', imageName);
  let out: NodeLink;
  const upscaler = spec.upscaler;
  if (upscaler.kind === 'pixel' && spec.factor !== undefined) {
    // A plain factor with a pixel method is exactly ComfyUI's ImageScaleBy.
    out = g.add('upscale', 'ImageScaleBy', `Upscale ×${spec.factor} (${spec.upscalerName})`, { image, upscale_method: upscaler.method, scale_by: spec.factor });
  } else {
    const target = upscaleTarget(spec, source);
    if (!target) throw new Error('upscale graph: the target size needs the source image size');
    const via = upscaler.kind === 'none' || upscaler.kind === 'latent' ? { kind: 'pixel' as const, method: 'lanczos' } : upscaler;
    out = upscaleImageTo(g, 'upscale', image, via, { ...target, crop: spec.crop });
  }
  g.add(OUTPUT_NODE, 'SaveImage', 'Save image', { images: out, filename_prefix: filenamePrefix });
  return g.graph();
}
