/**
 * An OpenAI image request as the A1111 body the front already knows how to resolve: the A1111 normaliser
 * then decides everything a render depends on (model, seed, size snapping, sampler, guidance, images, mask),
 * exactly as for `/sdapi/v1/*`. What this module adds is OpenAI's vocabulary: `size` "WxH"/"auto", `n`,
 * `output_format`, the edit routing by the model's capabilities (references for instruction-edit models,
 * img2img or inpaint for the others), the OpenAI mask convention, and the way back: A1111 field names in
 * errors and warnings become the OpenAI field the client sent.
 */
import { imageSize } from 'image-size';
import type { ModelProfile } from '../../models/profile.ts';
import { listImageProfiles, resolveModel } from '../../models/registry.ts';
import { RequestError, describeValue, type RequestErrorStatus } from '../a1111/errors.ts';
import type { EditFile } from './edit-body.ts';
import { ACCEPTED_NOT_APPLIED, KNOWN_FIELDS, SILENTLY_ACCEPTED, type ImageEditFields, type ImageGenerationBody } from './schema.ts';

export interface TranslateContext {
  /** The model when the request names none (the A1111 default: options, then DEFAULT_MODEL). */
  defaultModel: string;
  maxBatch: number;
  maxRenderPixels?: number;
}

export interface Translated {
  route: 'txt2img' | 'img2img';
  body: Record<string, unknown>;
  profile: ModelProfile;
  warnings: string[];
  /** A1111 field → the OpenAI field it came from, for errors and warnings. */
  fieldMap: Record<string, string>;
  responseFormat: 'b64_json' | 'url';
}

/** OpenAI's own model names: clients send them by default; they get the default model and a warning. */
const OPENAI_MODEL = /^(dall-e-[23]|gpt-image-[0-9a-z.-]+)$/i;
const SIZE = /^(\d{1,5})\s*[x×]\s*(\d{1,5})$/i;

function chooseProfile(model: string | undefined, ctx: TranslateContext, warnings: string[]): ModelProfile {
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

/** The first image's own size, fitted into the model's sides and pixel budget and onto its grid. */
function sizeOfImage(file: EditFile, profile: ModelProfile, budget: number): { width: number; height: number } | undefined {
  let dims: { width?: number; height?: number };
  try {
    dims = imageSize(file.bytes ?? Buffer.alloc(0));
  } catch {
    return undefined; // not readable: the A1111 path reports the image itself
  }
  const { width: w, height: h } = dims;
  if (!w || !h) return undefined;
  const scale = Math.min(1, Math.sqrt(budget / (w * h)), profile.maxSide / w, profile.maxSide / h);
  const fit = (v: number): number => Math.max(profile.minSide, Math.floor((v * scale) / profile.grid) * profile.grid);
  return { width: fit(w), height: fit(h) };
}

function outputFormat(b: ImageGenerationBody, warnings: string[]): Record<string, unknown> {
  const raw = (b.output_format ?? 'png').trim().toLowerCase();
  const format = raw === 'jpg' || raw === 'jpeg' ? 'jpg' : raw === 'webp' || raw === 'png' ? raw : undefined;
  if (!format) warnings.push(`output_format: "${raw}" not supported (png, jpeg, webp); answering PNG`);
  const settings: Record<string, unknown> = { samples_format: format ?? 'png', webp_lossless: false, jpeg_quality: 80 };
  if (b.output_compression !== undefined) {
    if (b.output_compression < 0 || b.output_compression > 100) {
      throw new RequestError(400, 'output_compression', `output_compression: must be 0..100, got ${b.output_compression}`);
    }
    settings.jpeg_quality = Math.max(1, b.output_compression);
    if (format === 'png' || format === undefined) warnings.push('output_compression: applies to jpeg and webp only; not applied to PNG');
  }
  return settings;
}

function leniencyWarnings(raw: Record<string, unknown>, warnings: string[]): void {
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined || v === null || v === '' || SILENTLY_ACCEPTED.has(k)) continue;
    // Own keys only: a body key named toString or constructor is not the object's inherited method (issue 27 L1).
    const harmless = Object.hasOwn(ACCEPTED_NOT_APPLIED, k) ? ACCEPTED_NOT_APPLIED[k] : undefined;
    if (harmless) {
      if (!harmless.includes(v)) warnings.push(`${k}: ${describeValue(v)} accepted but not applied by this service`);
    } else if (!KNOWN_FIELDS.has(k)) {
      warnings.push(`${k}: unknown field; ignored`);
    }
  }
}

/** The fields both routes share: prompt, seed, steps, guidance, sampler, count, output format. */
function common(b: ImageGenerationBody, raw: Record<string, unknown>, profile: ModelProfile, ctx: TranslateContext, warnings: string[]) {
  if (b.stream === true) throw new RequestError(400, 'stream', 'stream: streamed partial images are not supported; omit stream or send false');
  const n = b.n ?? 1;
  if (n < 1 || n > ctx.maxBatch) throw new RequestError(400, 'n', `n: must be 1..${ctx.maxBatch} (MAX_BATCH), got ${n}`, { limit: ctx.maxBatch });
  leniencyWarnings(raw, warnings);
  const body: Record<string, unknown> = {
    model: profile.id,
    prompt: b.prompt,
    batch_size: n,
    override_settings: outputFormat(b, warnings),
  };
  const fieldMap: Record<string, string> = {
    batch_size: 'n',
    width: 'size',
    height: 'size',
    sampler_name: 'sampler',
    'override_settings.samples_format': 'output_format',
    samples_format: 'output_format',
    'override_settings.jpeg_quality': 'output_compression',
  };
  const set = (a1111: string, value: unknown, openai: string): void => {
    if (value === undefined) return;
    body[a1111] = value;
    fieldMap[a1111] = openai;
  };
  set('negative_prompt', b.negative_prompt, 'negative_prompt');
  set('seed', b.seed, 'seed');
  set('steps', b.steps, 'steps');
  set('sampler_name', b.sampler, 'sampler');
  set('scheduler', b.scheduler, 'scheduler');
  set('cfg_scale', b.cfg_scale, 'cfg_scale');
  if (b.guidance !== undefined) {
    // The knob a user means by "guidance": Flux's distilled guidance where the model has one, else its CFG.
    if (profile.defaults.guidance !== undefined) set('distilled_cfg_scale', b.guidance, 'guidance');
    else if (b.cfg_scale === undefined) set('cfg_scale', b.guidance, 'guidance');
    else warnings.push(`guidance: ${b.guidance} not applied; cfg_scale ${b.cfg_scale} sets ${profile.id}'s guidance`);
  }
  return { body, fieldMap };
}

export function translateGeneration(raw: Record<string, unknown>, b: ImageGenerationBody, ctx: TranslateContext, preWarnings: string[] = []): Translated {
  const warnings = [...preWarnings];
  const profile = chooseProfile(b.model, ctx, warnings);
  const { body, fieldMap } = common(b, raw, profile, ctx, warnings);
  const size = parseSize(b.size);
  if (size) Object.assign(body, size);
  return { route: 'txt2img', body, profile, warnings, fieldMap, responseFormat: b.response_format ?? 'b64_json' };
}

const base64Of = (f: EditFile): string => f.text ?? f.bytes!.toString('base64');

/**
 * Edits by capability: an instruction-edit model takes every image as a reference (the prompt is the
 * instruction, a mask does not apply); a model with img2img takes one image, redrawn with `strength`, or
 * inpainted where the mask is transparent.
 */
export function translateEdit(
  raw: Record<string, unknown>,
  b: ImageEditFields,
  images: EditFile[],
  mask: { png: Buffer } | undefined,
  ctx: TranslateContext,
  preWarnings: string[] = [],
): Translated {
  const warnings = [...preWarnings];
  const profile = chooseProfile(b.model, ctx, warnings);
  if (images.length === 0) throw new RequestError(400, 'image', 'image: required (one or more image files)');
  const { body, fieldMap } = common(b, raw, profile, ctx, warnings);
  const can = (k: string): boolean => (profile.kinds as readonly string[]).includes(k);
  const size = parseSize(b.size) ?? (images[0]!.bytes ? sizeOfImage(images[0]!, profile, ctx.maxRenderPixels ?? profile.maxPixels) : undefined);
  if (size) Object.assign(body, size);

  if (can('edit')) {
    body.extra_images = images.map(base64Of);
    images.forEach((f, i) => (fieldMap[`extra_images.${i}`] = f.field));
    fieldMap.extra_images = 'image';
    if (mask) warnings.push(`mask: not applied; ${profile.id} edits what the prompt says (no mask)`);
    if (b.strength !== undefined) warnings.push(`strength: not applied; ${profile.id} edits from references, not from a partly noised image`);
    return { route: 'txt2img', body, profile, warnings, fieldMap, responseFormat: b.response_format ?? 'b64_json' };
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
  body.init_images = [base64Of(images[0]!)];
  fieldMap['init_images.0'] = images[0]!.field;
  fieldMap.init_images = 'image';
  if (mask) {
    body.mask = mask.png.toString('base64');
    body.inpainting_mask_invert = 0;
    body.mask_round = false;
  }
  // A masked area is redrawn whole by default (OpenAI's inpaint); without a mask A1111's 0.75 keeps the layout.
  body.denoising_strength = b.strength ?? (mask ? 1 : 0.75);
  fieldMap.denoising_strength = 'strength';
  return { route: 'img2img', body, profile, warnings, fieldMap, responseFormat: b.response_format ?? 'b64_json' };
}

/** `width: …` → `size (width): …`: a text from the A1111 path, in the client's field names. */
export function renameFieldIn(text: string, fieldMap: Record<string, string>): string {
  const colon = text.indexOf(':');
  if (colon <= 0) return text;
  const field = text.slice(0, colon);
  const openai = fieldMap[field];
  if (!openai || openai === field) return text;
  return `${openai} (${field})${text.slice(colon)}`;
}

/** A RequestError of the A1111 path, naming the OpenAI field. */
export function renameRequestError(err: RequestError, fieldMap: Record<string, string>): RequestError {
  const field = fieldMap[err.field] ?? err.field;
  // A1111's "Init image not found" 404 is about a missing field here: a 400.
  const status: RequestErrorStatus = err.status === 404 ? 400 : err.status;
  return new RequestError(status, field, renameFieldIn(err.message, fieldMap), err.extra);
}
