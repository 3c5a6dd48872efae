/**
 * A1111's infotext (`<prompt>\nNegative prompt: ...\nSteps: 20, Sampler: Euler, ...`): written into each
 * output PNG's `parameters` chunk by the activities and reported in `info.infotexts` by the front.
 */
import type { RenderRequest } from './types.ts';

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
  if (request.kind === 'upscale' && request.upscale) {
    // A1111 extras' keys.
    const u = request.upscale;
    const how = u.factor !== undefined ? `Postprocess upscale by: ${u.factor}` : `Postprocess upscale to: ${u.width}x${u.height}`;
    return `${how}, Postprocess upscaler: ${quote(u.upscalerName)}`;
  }
  if (request.kind === 'preprocess' && request.preprocess) {
    const p = request.preprocess;
    const thresholds = p.canny ? `, Low threshold: ${p.canny.low}, High threshold: ${p.canny.high}` : '';
    return `Preprocessor: ${p.node ? quote(p.node.module) : p.preprocessor}${thresholds}`;
  }
  if (request.kind === 'segment' && request.segment) {
    const m = request.segment.method;
    const output = request.segment.outputs[itemIndex % request.segment.outputs.length];
    return m.kind === 'remove-background'
      ? `Rembg: ${quote(m.model)}, Output: ${output}`
      : `Segment: ${quote(m.text)}, Threshold: ${m.threshold}, Model: ${quote(m.checkpoint)}, Output: ${output}`;
  }
  const params: [string, string | number | undefined][] = [
    ['Steps', request.steps],
    ['Sampler', request.report.samplerName],
    ['Schedule type', request.report.scheduler],
    ['CFG scale', request.cfg],
    // Forge's key for Flux guidance, so Forge-aware tools read it back.
    ['Distilled CFG Scale', request.guidance],
    ['Seed', request.seed + itemIndex],
    ['Size', `${request.width}x${request.height}`],
    ['Model', request.model],
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
  const line = params
    .filter((p): p is [string, string | number] => p[1] !== undefined)
    .map(([k, v]) => `${k}: ${quote(v)}`)
    .join(', ');
  // LoRA tags are stripped from the text the encoder sees; the infotext keeps them, as A1111's does.
  const tags = (request.loras ?? []).map((l) => (l.model === l.clip ? `<lora:${l.name}:${l.model}>` : `<lora:${l.name}:${l.clip}:${l.model}>`));
  const lines = [[request.prompt, ...tags].filter((t) => t !== '').join(' ')];
  if (request.negativePrompt) lines.push(`Negative prompt: ${request.negativePrompt}`);
  lines.push(line);
  return lines.join('\n');
}
