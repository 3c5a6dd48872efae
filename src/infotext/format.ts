/**
 * A1111's infotext (`<prompt>\nNegative prompt: ...\nSteps: 20, Sampler: Euler, ...`): written into each
 * output PNG's `parameters` chunk by the activities and reported in `info.infotexts` by the front.
 */
import {
  isImageRender,
  type ImageRender,
  type PreprocessSpec,
  type PromptRender,
  type RenderRequest,
  type SegmentSpec,
  type UpscaleSpec,
  type VideoRender,
} from '../contracts/render.ts';

/** A1111's `quote()`: values containing `,`, `:` or a newline are JSON-quoted so infotext parsers split right. */
function quote(v: string | number): string {
  const s = String(v);
  return /[,:\n]/.test(s) ? JSON.stringify(s) : s;
}

/**
 * The infotext of item `itemIndex`. Deterministic on purpose (no timestamps, no render ids): it is written
 * into the PNG, and identical requests must give identical bytes.
 */
export function infotextFor(request: RenderRequest, itemIndex: number): string {
  switch (request.kind) {
    case 'upscale':
      return upscaleInfotext(request.upscale);
    case 'preprocess':
      return preprocessInfotext(request.preprocess);
    case 'segment':
      return segmentInfotext(request.segment, itemIndex);
    default:
      return sampledInfotext(request, itemIndex);
  }
}

/** A1111 extras' keys. */
function upscaleInfotext(u: UpscaleSpec): string {
  const how = u.factor !== undefined ? `Postprocess upscale by: ${u.factor}` : `Postprocess upscale to: ${u.width}x${u.height}`;
  return `${how}, Postprocess upscaler: ${quote(u.upscalerName)}`;
}

function preprocessInfotext(p: PreprocessSpec): string {
  const thresholds = p.canny ? `, Low threshold: ${p.canny.low}, High threshold: ${p.canny.high}` : '';
  return `Preprocessor: ${p.node ? quote(p.node.module) : p.preprocessor}${thresholds}`;
}

function segmentInfotext(segment: SegmentSpec, itemIndex: number): string {
  const m = segment.method;
  const output = segment.outputs[itemIndex % segment.outputs.length];
  return m.kind === 'remove-background'
    ? `Rembg: ${quote(m.model)}, Output: ${output}`
    : `Segment: ${quote(m.text)}, Threshold: ${m.threshold}, Model: ${quote(m.checkpoint)}, Output: ${output}`;
}

/** A1111's own infotext: the prompt, the negative prompt, then the sampling parameters (an image's second pass and upscale included). */
function sampledInfotext(request: ImageRender | VideoRender | PromptRender, itemIndex: number): string {
  const image = isImageRender(request) ? request : undefined;
  // A video or a graph has no A1111 labels: its ComfyUI names are reported as they are.
  const labels = image?.report ?? { samplerName: request.sampler, scheduler: request.scheduler };
  const params: [string, string | number | undefined][] = [
    ['Steps', request.steps],
    ['Sampler', labels.samplerName],
    ['Schedule type', labels.scheduler],
    ['CFG scale', request.cfg],
    // Forge's key for Flux guidance, so Forge-aware tools read it back.
    ['Distilled CFG Scale', image?.guidance],
    ['Seed', request.seed + itemIndex],
    ['Size', `${request.width}x${request.height}`],
    ['Model', request.model],
    ...(image ? imageParams(image) : []),
  ];
  const line = params
    .filter((p): p is [string, string | number] => p[1] !== undefined)
    .map(([k, v]) => `${k}: ${quote(v)}`)
    .join(', ');
  // LoRA tags are stripped from the text the encoder sees; the infotext keeps them, as A1111's does.
  const tags = (image?.loras ?? []).map((l) => (l.model === l.clip ? `<lora:${l.name}:${l.model}>` : `<lora:${l.name}:${l.clip}:${l.model}>`));
  const lines = [[request.prompt, ...tags].filter((t) => t !== '').join(' ')];
  const negativePrompt = request.kind === 'prompt' ? '' : request.negativePrompt;
  if (negativePrompt) lines.push(`Negative prompt: ${negativePrompt}`);
  lines.push(line);
  return lines.join('\n');
}

/** The image kinds' keys after the model: denoise, the hires fix, resize mode, SD upscale. */
function imageParams(request: ImageRender): [string, string | number | undefined][] {
  return [
    ['Denoising strength', request.kind === 'img2img' ? request.denoise : request.hires?.denoise],
    ['Hires resize', request.hires ? `${request.hires.width}x${request.hires.height}` : undefined],
    ['Hires upscaler', request.hires?.upscalerName],
    ['Hires steps', request.hires?.steps],
    // A1111 writes these only when the second pass differs from the first.
    ['Hires sampler', request.hires?.samplerLabel],
    ['Hires schedule type', request.hires?.schedulerLabel],
    ['Resize mode', request.resizeMode],
    // A1111's SD upscale script adds these two.
    ['SD upscale overlap', request.sdUpscale?.overlap],
    ['SD upscale upscaler', request.sdUpscale?.upscalerName],
  ];
}
