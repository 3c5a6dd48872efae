/**
 * RenderRequest → RenderPlan: one ComfyUI graph per output item, plus the input uploads the graphs refer to.
 * Pure and deterministic (no clock, no randomness, no I/O), so the plan recorded in history is exactly
 * what is rebuilt from the same request.
 */
import type { ComfyGraph } from '../comfyui/graph.ts';
import type {
  BlobRef,
  ImageRender,
  InputUpload,
  ModelRender,
  PreprocessRender,
  RenderItem,
  RenderPlan,
  RenderRequest,
  SegmentRender,
  UpscaleRender,
  VideoSpec,
} from '../contracts/render.ts';
import { extensionForMime } from '../images/mime.ts';
import { familyBuilder, familyBuilds, OUTPUT_NODE, type BuildInput, type FamilyBuilder } from './families/index.ts';
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
  switch (req.kind) {
    case 'upscale':
      return planUpscale(req, opts);
    case 'preprocess':
      return planPreprocess(req, opts);
    case 'segment':
      return planSegment(req, opts);
    case 'prompt':
      throw new Error('planRender: a prompt render runs its own graph (src/renders/prompt-plan.ts)');
    default:
      return planModelRender(req, opts);
  }
}

/** An image or video render: the model's family builds each item's graph. */
function planModelRender(req: ModelRender, opts: { renderId: string }): RenderPlan {
  const profile = getProfile(req.model);
  if (!profile) throw new Error(`planRender: unknown model ${req.model}`);
  const builder = familyBuilder(profile.family);
  if (!familyBuilds(builder, req.kind) || !profile.kinds.includes(req.kind)) {
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
  const images = req.kind === 'video' ? videoImages(req.video, nameOf) : imageImages(req, nameOf);

  const count = req.batchSize * req.nIter;
  const items: RenderItem[] = [];
  for (let index = 0; index < count; index++) {
    // Every item is its own single-image prompt with seed + index: reproducible alone with that seed.
    const seed = req.seed + index;
    const graph = buildItemGraph(builder, {
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

type Images = BuildInput['images'];

/** The LoadImage names of an image render's images, in upload order: init, mask, references, control images. */
function imageImages(req: ImageRender, nameOf: (blob: BlobRef) => string): Images {
  return {
    ...(req.initImage ? { init: nameOf(req.initImage) } : {}),
    ...(req.mask ? { mask: nameOf(req.mask) } : {}),
    refs: req.extraImages.map(nameOf),
    ...(req.controls?.length ? { controls: req.controls.map((unit) => nameOf(unit.image)) } : {}),
  };
}

/** The LoadImage names of a video's images, in upload order: references, first frame, last frame. */
function videoImages(video: VideoSpec, nameOf: (blob: BlobRef) => string): Images {
  return {
    refs: video.references.map(nameOf),
    ...(video.firstFrame ? { first: nameOf(video.firstFrame) } : {}),
    ...(video.lastFrame ? { last: nameOf(video.lastFrame) } : {}),
  };
}

/** One item's graph: a video family builds video renders, an image family the image kinds. */
function buildItemGraph(builder: FamilyBuilder, input: BuildInput<ModelRender>): ComfyGraph {
  const { request } = input;
  if (request.kind === 'video' && builder.video) return builder.build({ ...input, request });
  if (request.kind !== 'video' && !builder.video) return builder.build({ ...input, request });
  throw new Error(`planRender: family ${builder.family} does not build ${request.kind} graphs`);
}

/** Extras upscale: one item per image, each its own prompt (no model, no seed). */
function planUpscale(req: UpscaleRender, opts: { renderId: string }): RenderPlan {
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
function planPreprocess(req: PreprocessRender, opts: { renderId: string }): RenderPlan {
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
function planSegment(req: SegmentRender, opts: { renderId: string }): RenderPlan {
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
