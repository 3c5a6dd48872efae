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
    ['Denoising strength', request.kind === 'img2img' ? request.denoise : undefined],
  ];
  const line = params
    .filter((p): p is [string, string | number] => p[1] !== undefined)
    .map(([k, v]) => `${k}: ${quote(v)}`)
    .join(', ');
  const lines = [request.prompt];
  if (request.negativePrompt) lines.push(`Negative prompt: ${request.negativePrompt}`);
  lines.push(line);
  return lines.join('\n');
}

