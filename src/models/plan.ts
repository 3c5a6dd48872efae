/**
 * RenderRequest → RenderPlan: one ComfyUI graph per output item, plus the input uploads the graphs refer to.
 * Pure and deterministic (no clock, no randomness, no I/O), so the plan recorded in history is exactly
 * what is rebuilt from the same request.
 */
import type { BlobRef, InputUpload, RenderItem, RenderPlan, RenderRequest } from '../render/types.ts';
import { extensionForMime } from '../images/mime.ts';
import { familyBuilder, OUTPUT_NODE } from './families/index.ts';
import { getProfile } from './registry.ts';
import { buildUpscaleGraph } from './families/upscale.ts';
import { buildPreprocessGraph } from './families/preprocess.ts';
import { buildSegmentGraph } from './families/segment.ts';

/** ComfyUI input subfolder for every uploaded image. */
export const INPUT_SUBFOLDER = 'comfy-durable';

/** Content-addressed upload of a blob: `comfy-durable/<sha256>.<ext>`; identical bytes = same name. */
export function inputUploadFor(blob: BlobRef): InputUpload {
  return { blob, subfolder: INPUT_SUBFOLDER, filename: `${blob.sha256}.${extensionForMime(blob.mime)}` };
}

/** The name LoadImage uses for an upload (`subfolder/filename`). */
export function loadImageName(upload: InputUpload): string {
  return `${upload.subfolder}/${upload.filename}`;
}

/** SaveImage prefix of item `index`: unique per render and item, so ComfyUI always writes a fresh file. */
export function filenamePrefixFor(renderId: string, index: number): string {
  return `comfy-durable/${renderId}/${index}`;
}

export function planRender(req: RenderRequest, opts: { renderId: string }): RenderPlan {
  if (req.kind === 'upscale') return planUpscale(req, opts);
  if (req.kind === 'preprocess') return planPreprocess(req, opts);
  if (req.kind === 'segment') return planSegment(req, opts);
  const profile = getProfile(req.model);
  if (!profile) throw new Error(`planRender: unknown model ${req.model}`);
  const builder = familyBuilder(profile.family);
  if (!builder.kinds.includes(req.kind) || !profile.kinds.includes(req.kind)) {
    throw new Error(`planRender: ${profile.id} does not support ${req.kind}`);
  }

  const uploads: InputUpload[] = [];
  const byHash = new Map<string, string>();
  const nameOf = (blob: BlobRef): string => {
    let name = byHash.get(blob.sha256);
    if (name === undefined) {
      const upload = inputUploadFor(blob);
      uploads.push(upload);
      name = loadImageName(upload);
      byHash.set(blob.sha256, name);
    }
    return name;
  };
  const images = {
    ...(req.initImage ? { init: nameOf(req.initImage) } : {}),
    ...(req.mask ? { mask: nameOf(req.mask) } : {}),
    refs: (req.video?.references ?? req.extraImages).map(nameOf),
    ...(req.video?.firstFrame ? { first: nameOf(req.video.firstFrame) } : {}),
    ...(req.video?.lastFrame ? { last: nameOf(req.video.lastFrame) } : {}),
    ...(req.controls?.length ? { controls: req.controls.map((unit) => nameOf(unit.image)) } : {}),
  };

  const count = req.batchSize * req.nIter;
  const items: RenderItem[] = [];
  for (let index = 0; index < count; index++) {
    // Every item is its own single-image prompt with seed + index: reproducible alone with that seed.
    const seed = req.seed + index;
    const graph = builder.build({
      profile,
      request: req,
      seed,
      filenamePrefix: filenamePrefixFor(opts.renderId, index),
      images,
    });
    items.push({ index, seed, graph });
  }
  return { items, uploads, outputNode: OUTPUT_NODE };
}

/** Extras upscale: one item per image, each its own prompt (no model, no seed). */
function planUpscale(req: RenderRequest, opts: { renderId: string }): RenderPlan {
  if (!req.upscale) throw new Error('planRender: upscale request without an upscale spec');
  const spec = req.upscale;
  const uploads = req.extraImages.map(inputUploadFor);
  const items: RenderItem[] = req.extraImages.map((blob, index) => ({
    index,
    seed: req.seed + index,
    graph: buildUpscaleGraph(spec, blob, loadImageName(uploads[index]!), filenamePrefixFor(opts.renderId, index)),
  }));
  const unique = [...new Map(uploads.map((u) => [u.filename, u])).values()];
  return { items, uploads: unique, outputNode: OUTPUT_NODE };
}

/** A preprocessor run alone: one item per image, each its own prompt (no model, no seed). */
function planPreprocess(req: RenderRequest, opts: { renderId: string }): RenderPlan {
  if (!req.preprocess) throw new Error('planRender: preprocess request without a preprocess spec');
  const spec = req.preprocess;
  const uploads = req.extraImages.map(inputUploadFor);
  const items: RenderItem[] = req.extraImages.map((_, index) => ({
    index,
    seed: req.seed + index,
    graph: buildPreprocessGraph(spec, loadImageName(uploads[index]!), filenamePrefixFor(opts.renderId, index)),
  }));
  const unique = [...new Map(uploads.map((u) => [u.filename, u])).values()];
  return { items, uploads: unique, outputNode: OUTPUT_NODE };
}

/** Background removal / text segmentation: one item per image and output (image-major), each its own prompt. */
function planSegment(req: RenderRequest, opts: { renderId: string }): RenderPlan {
  if (!req.segment) throw new Error('planRender: segment request without a segment spec');
  const { method, outputs } = req.segment;
  const uploads = req.extraImages.map(inputUploadFor);
  const items: RenderItem[] = req.extraImages.flatMap((blob, i) =>
    outputs.map((output, o) => {
      const index = i * outputs.length + o;
      const source = { name: loadImageName(uploads[i]!), width: blob.width ?? req.width, height: blob.height ?? req.height };
      return { index, seed: req.seed + index, graph: buildSegmentGraph(method, output, source, filenamePrefixFor(opts.renderId, index)) };
    }),
  );
  const unique = [...new Map(uploads.map((u) => [u.filename, u])).values()];
  return { items, uploads: unique, outputNode: OUTPUT_NODE };
}
