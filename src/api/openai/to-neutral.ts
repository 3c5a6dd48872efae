/**
 * An OpenAI image request in the neutral request's words (src/request/neutral.ts), mapped once, each neutral
 * field beside the OpenAI field it came from: the resolver's refusals and adjustments then name `n`, `size`,
 * `image`, `strength` where they throw. What this module adds is OpenAI's vocabulary: the model names its SDKs
 * send by default, `size` "WxH"/"auto", `n`, `output_format` / `output_compression`, `guidance` as the knob a
 * user means, and the edit routing by the model's capabilities (references for instruction-edit models,
 * img2img or inpaint for the others).
 */
import type { ModelProfile } from '../../models/profile.ts';
import { listImageProfiles, resolveModel } from '../../models/registry.ts';
import type { OutputFormat } from '../../contracts/render.ts';
import type { ImageSource } from '../../images/image-set.ts';
import { RequestError, describeValue } from '../../errors/request-error.ts';
import type { FieldNames } from '../../request/fields.ts';
import type { NeutralImageRequest } from '../../request/neutral.ts';
import { ACCEPTED_NOT_APPLIED, KNOWN_FIELDS, SILENTLY_ACCEPTED, type ImageEditFields, type ImageGenerationBody } from './schema.ts';

export interface OpenAiContext {
  /** The model when the request names none (the A1111 default: options, then DEFAULT_MODEL). */
  defaultModel: string;
  maxBatch: number;
}

export interface OpenAiRequest {
  neutral: NeutralImageRequest;
  profile: ModelProfile;
  responseFormat: 'b64_json' | 'url';
}

/** The OpenAI field of each neutral field (`cfg` is `guidance` where guidance sets a model's CFG: openAiNames). */
const OPENAI_NAMES: FieldNames = {
  model: 'model',
  prompt: 'prompt',
  negativePrompt: 'negative_prompt',
  seed: 'seed',
  steps: 'steps',
  cfg: 'cfg_scale',
  guidance: 'guidance',
  sampler: 'sampler',
  scheduler: 'scheduler',
  width: 'size',
  height: 'size',
  batchSize: 'n',
  nIter: 'n',
  denoise: 'strength',
  init: 'image',
  mask: 'mask',
  refs: 'image',
};

/** OpenAI's own model names: clients send them by default; they get the default model and a warning. */
const OPENAI_MODEL = /^(dall-e-[23]|gpt-image-[0-9a-z.-]+)$/i;
const SIZE = /^(\d{1,5})\s*[x×]\s*(\d{1,5})$/i;

export function generationRequest(raw: Record<string, unknown>, b: ImageGenerationBody, ctx: OpenAiContext, preWarnings: string[] = []): OpenAiRequest {
  const warnings = [...preWarnings];
  const profile = chooseProfile(b.model, ctx, warnings);
  const neutral = common(b, raw, profile, ctx, warnings);
  const size = parseSize(b.size);
  return { neutral: { ...neutral, ...size }, profile, responseFormat: b.response_format ?? 'b64_json' };
}

/**
 * Edits by capability: an instruction-edit model takes every image as a reference (the prompt is the
 * instruction, a mask does not apply); a model with img2img takes one image, redrawn with `strength`, or
 * inpainted where the mask is transparent. `mask` is already in the service's convention (white = repaint).
 */
export function editRequest(
  raw: Record<string, unknown>,
  b: ImageEditFields,
  images: ImageSource[],
  mask: ImageSource | undefined,
  ctx: OpenAiContext,
  preWarnings: string[] = [],
): OpenAiRequest {
  const warnings = [...preWarnings];
  const profile = chooseProfile(b.model, ctx, warnings);
  if (images.length === 0) throw new RequestError(400, 'image', 'image: required (one or more image files)');
  const neutral = { ...common(b, raw, profile, ctx, warnings), ...(parseSize(b.size) ?? { sizeFromImage: true }) };
  const responseFormat = b.response_format ?? 'b64_json';
  const can = (k: string): boolean => (profile.kinds as readonly string[]).includes(k);
  if (can('edit')) {
    if (mask) warnings.push(`mask: not applied; ${profile.id} edits what the prompt says (no mask)`);
    if (b.strength !== undefined) warnings.push(`strength: not applied; ${profile.id} edits from references, not from a partly noised image`);
    return { neutral: { ...neutral, refs: images }, profile, responseFormat };
  }
  if (!can('img2img')) {
    const able = listImageProfiles()
      .filter((p) => p.kinds.includes('edit') || p.kinds.includes('img2img'))
      .map((p) => p.id);
    throw new RequestError(400, 'model', `model: ${profile.id} cannot edit images; models that can: ${able.join(', ')}`, { known: able });
  }
  if (images.length > 1) {
    const editModels = listImageProfiles()
      .filter((p) => p.kinds.includes('edit'))
      .map((p) => p.id);
    throw new RequestError(
      400,
      'image',
      `image: ${profile.id} edits one image (img2img / inpaint), ${images.length} sent; models that take several: ${editModels.join(', ')}`,
    );
  }
  const img2img: NeutralImageRequest = {
    ...neutral,
    route: 'img2img',
    init: images[0]!,
    ...(mask ? { mask: { source: mask, invert: false, round: false } } : {}),
    // A masked area is redrawn whole by default (OpenAI's inpaint); without a mask A1111's 0.75 keeps the layout.
    denoise: b.strength ?? (mask ? 1 : 0.75),
  };
  return { neutral: img2img, profile, responseFormat };
}

function chooseProfile(model: string | undefined, ctx: OpenAiContext, warnings: string[]): ModelProfile {
  const fallback = (): ModelProfile => {
    const p = resolveModel(ctx.defaultModel);
    if (!p) throw new Error(`configured default model "${ctx.defaultModel}" is not a known model`);
    return p;
  };
  if (model === undefined) return fallback();
  const profile = resolveModel(model);
  if (profile && !profile.kinds.includes('video')) return profile;
  if (!profile && OPENAI_MODEL.test(model)) {
    const p = fallback();
    warnings.push(`model: "${model}" is OpenAI's; rendered with ${p.id} (name one of GET /v1/models)`);
    return p;
  }
  const known = listImageProfiles().map((p) => p.id);
  const why = profile ? `${profile.id} is a video model (use POST /v1/videos)` : `unknown model "${model}"`;
  throw new RequestError(400, 'model', `model: ${why}; image models: ${known.join(', ')}`, { known });
}

function parseSize(size: string | undefined): { width: number; height: number } | undefined {
  if (size === undefined || size.trim().toLowerCase() === 'auto') return undefined;
  const m = SIZE.exec(size.trim());
  if (!m) throw new RequestError(400, 'size', `size: ${JSON.stringify(size)} is not WIDTHxHEIGHT (e.g. 1024x1024) or auto`);
  return { width: Number(m[1]), height: Number(m[2]) };
}

function outputFormat(b: ImageGenerationBody, warnings: string[]): OutputFormat | undefined {
  const raw = (b.output_format ?? 'png').trim().toLowerCase();
  const format = raw === 'jpg' || raw === 'jpeg' ? 'jpeg' : raw === 'webp' || raw === 'png' ? raw : undefined;
  if (!format) warnings.push(`output_format: "${raw}" not supported (png, jpeg, webp); answering PNG`);
  let quality = 80;
  if (b.output_compression !== undefined) {
    if (b.output_compression < 0 || b.output_compression > 100) {
      throw new RequestError(400, 'output_compression', `output_compression: must be 0..100, got ${b.output_compression}`);
    }
    quality = Math.max(1, Math.round(b.output_compression));
    if (format === 'png' || format === undefined) warnings.push('output_compression: applies to jpeg and webp only; not applied to PNG');
  }
  return format === 'jpeg' || format === 'webp' ? { format, quality, lossless: false } : undefined;
}

/** Fields the body carries that this service ignores, said in warnings. Own keys only: `toString` is a field name here. */
function leniencyWarnings(raw: Record<string, unknown>, warnings: string[]): void {
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined || v === null || v === '' || SILENTLY_ACCEPTED.has(k)) continue;
    const harmless = Object.hasOwn(ACCEPTED_NOT_APPLIED, k) ? ACCEPTED_NOT_APPLIED[k] : undefined;
    if (harmless) {
      if (!harmless.includes(v)) warnings.push(`${k}: ${describeValue(v)} accepted but not applied by this service`);
    } else if (!KNOWN_FIELDS.has(k)) {
      warnings.push(`${k}: unknown field; ignored`);
    }
  }
}

/** The fields both routes share: prompt, seed, steps, guidance, sampler, count, output format. */
function common(b: ImageGenerationBody, raw: Record<string, unknown>, profile: ModelProfile, ctx: OpenAiContext, warnings: string[]): NeutralImageRequest {
  if (b.stream === true) throw new RequestError(400, 'stream', 'stream: streamed partial images are not supported; omit stream or send false');
  const n = b.n ?? 1;
  if (n < 1 || n > ctx.maxBatch) throw new RequestError(400, 'n', `n: must be 1..${ctx.maxBatch} (MAX_BATCH), got ${n}`, { limit: ctx.maxBatch });
  leniencyWarnings(raw, warnings);
  let names = OPENAI_NAMES;
  let cfg = b.cfg_scale;
  let guidance: number | undefined;
  if (b.guidance !== undefined) {
    // The knob a user means by "guidance": Flux's distilled guidance where the model has one, else its CFG.
    if (profile.defaults.guidance !== undefined) guidance = b.guidance;
    else if (b.cfg_scale === undefined) {
      cfg = b.guidance;
      names = { ...OPENAI_NAMES, cfg: 'guidance' };
    } else warnings.push(`guidance: ${b.guidance} not applied; cfg_scale ${b.cfg_scale} sets ${profile.id}'s guidance`);
  }
  const output = outputFormat(b, warnings);
  return {
    kind: 'image',
    names,
    route: 'txt2img',
    model: profile.id,
    prompt: b.prompt,
    batchSize: n,
    refs: [],
    loraTags: 'apply',
    warnings,
    ...(b.negative_prompt !== undefined ? { negativePrompt: b.negative_prompt } : {}),
    ...(b.seed !== undefined ? { seed: b.seed } : {}),
    ...(b.steps !== undefined ? { steps: b.steps } : {}),
    ...(cfg !== undefined ? { cfg } : {}),
    ...(guidance !== undefined ? { guidance } : {}),
    ...(b.sampler !== undefined ? { sampler: b.sampler } : {}),
    ...(b.scheduler !== undefined ? { scheduler: b.scheduler } : {}),
    ...(output ? { output } : {}),
  };
}
