/**
 * A1111 body → fully resolved RenderRequest. Everything a render depends on is decided
 * here: model, seed, defaults, sampler mapping, size snapping, kind routing, decoded and checked images.
 * Bad input throws a RequestError naming the field before anything is stored or started. Cheap checks run
 * before image decoding, so a wrong size fails without decoding megabytes of base64.
 */
import type { BlobRef, RenderKind, RenderRequest } from '../../render/types.ts';
import type { Config } from '../../config/config.ts';
import type { DecodedImage } from '../../images/decode.ts';
import { decodeImageSet, type DecodedImageSet, type ImageSetInput } from '../../images/image-set.ts';
import { decodeImageSetOffLoop } from '../../bytes/off-loop.ts';
import type { ModelProfile } from '../../models/profile.ts';
import { knownModelNames, listImageProfiles, listProfiles, resolveModel } from '../../models/registry.ts';
import { samplerLabel, schedulerLabel, sigmaScheduleFor } from '../../models/samplers.ts';
import { RequestError, describeValue } from './errors.ts';
import { requestErrorFromIssues } from '../../errors/request-error.ts';
import { buildParameters } from './response.ts';
import { schemaFor, type A1111Body, type A1111Route } from './schema.ts';
import { inRange, present } from './fields.ts';
import { chooseGuidance, chooseSampler } from './sampling.ts';
import { chooseResizeMode, chooseSize, fitSize } from './size.ts';
import { chooseInpaint } from './inpaint.ts';
import { chooseSdUpscale, isSdUpscale, sdUpscaleBatch, sdUpscaleOutput } from './sd-upscale.ts';
import { unappliedFieldWarnings } from './unapplied.ts';
import { chooseHires, chooseOutputFormat, overrideWarnings, parseLoraTags, resolveLoras, type CatalogLists } from './tweaks.ts';

export type { DecodedImage } from '../../images/decode.ts';

export interface NormalizeLimits {
  maxImageBytes: number;
  maxImagePixels: number;
  /** Most output images per request (batch_size × n_iter). */
  maxBatch: number;
  /** Most reference images per edit (the model's own limit may be lower). */
  maxExtraImages: number;
  /** Pixel budget of one output image; absent: the model's own `maxPixels`. */
  maxRenderPixels?: number;
}

/** The limits a front's configuration sets, for every route that normalises a render request. */
export function normalizeLimits(
  config: Pick<Config, 'MAX_IMAGE_BYTES' | 'MAX_IMAGE_PIXELS' | 'MAX_BATCH' | 'MAX_EXTRA_IMAGES' | 'MAX_RENDER_PIXELS'>,
): NormalizeLimits {
  return {
    maxImageBytes: config.MAX_IMAGE_BYTES,
    maxImagePixels: config.MAX_IMAGE_PIXELS,
    maxBatch: config.MAX_BATCH,
    maxExtraImages: config.MAX_EXTRA_IMAGES,
    ...(config.MAX_RENDER_PIXELS !== undefined ? { maxRenderPixels: config.MAX_RENDER_PIXELS } : {}),
  };
}

export interface NormalizeContext {
  /** Profile id (or any accepted name) used when the request names no model. */
  defaultModel: string;
  /** Uniform in [0, 1); injected so tests get fixed "random" seeds. */
  random: () => number;
  limits: NormalizeLimits;
  /** ComfyUI's LoRA and upscale-model files, fetched by the route (LoRA tags and upscalers resolve against them). */
  catalog?: CatalogLists;
  /** Current `/sdapi/v1/options` values (samples_format, jpeg_quality, ...). */
  options?: Record<string, unknown>;
  log?: (msg: string, obj: Record<string, unknown>) => void;
}

export interface NormalizedRequest {
  request: RenderRequest;
  /** Distinct input images to store under `ref.sha256` once normalisation has fully succeeded. */
  images: DecodedImage[];
  /** Ignored or adjusted inputs, for logs and `info.warnings`. */
  warnings: string[];
  /** A1111 `parameters` for the response, computed now so the body (with its base64) can be dropped. */
  parameters: Record<string, unknown>;
}

/** Seeds and seed + i must stay exactly representable in JavaScript (and thus in history JSON). */
export const MAX_SEED = Number.MAX_SAFE_INTEGER;
/** A1111's random seed range: 0..4294967293. */
const RANDOM_SEED_BOUND = 4294967294;
/** A1111's UI maximum; more is almost always a client mistake that would hold a GPU for long. */
export const MAX_STEPS = 150;
/** A1111 img2img API default. */
export const DEFAULT_DENOISE = 0.75;

/**
 * Everything but the images, then the images decoded on this thread (tests, tools). The service calls
 * normalizeRequestOffLoop.
 */
export function normalizeRequest(route: A1111Route, body: unknown, ctx: NormalizeContext): NormalizedRequest {
  const plan = planRequest(route, body, ctx);
  return finishRequest(plan, decodeImageSet(plan.imageInputs, ctx.limits), ctx);
}

/** normalizeRequest with the images decoded and checked in a byte worker (src/bytes/), off the event loop. */
export async function normalizeRequestOffLoop(route: A1111Route, body: unknown, ctx: NormalizeContext): Promise<NormalizedRequest> {
  const plan = planRequest(route, body, ctx);
  return finishRequest(plan, await decodeImageSetOffLoop(plan.imageInputs, ctx.limits), ctx);
}

type Plan = ReturnType<typeof planRequest>;

function planRequest(route: A1111Route, body: unknown, ctx: NormalizeContext) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RequestError(422, '', `request body must be a JSON object, got ${describeValue(body)}`);
  }
  const b = parseBody(route, body as Record<string, unknown>);
  const warnings: string[] = [];

  rejectUnsupportedScripts(b);
  const lists = ctx.catalog ?? {};
  const sdUpscale = isSdUpscale(b) ? chooseSdUpscale(route, b, lists, warnings) : undefined;
  const profile = chooseModel(b, ctx);
  const { sampler, scheduler: chosenScheduler, custom } = chooseSampler(b, profile, warnings);
  const { count, batchSize, nIter } = sdUpscaleBatch(chooseBatch(b, ctx.limits), sdUpscale, warnings);
  const seed = chooseSeed(b, count, ctx.random);
  // SD upscale's size comes from the init image (finishRequest); width and height are A1111's tile size there.
  const size = chooseSize(b, profile, ctx.limits, sdUpscale ? [] : warnings);
  // A1111 clients send `steps: 0` for "the default" (A1111 itself would render nothing useful).
  const steps = inRange(b.steps === undefined || b.steps === 0 ? profile.defaults.steps : b.steps, 1, MAX_STEPS, 'steps');
  const schedule = custom ? sigmaScheduleFor(custom.kind, custom.label, steps) : undefined;
  if (schedule?.approx) warnings.push(`scheduler: ${schedule.approx}`);
  // A custom schedule has no KSampler name: `scheduler` stays the model's (the hires pass and fallbacks use it).
  const scheduler = custom && !schedule?.sigmas ? 'simple' : chosenScheduler;
  const { cfg, guidance, negativePrompt } = chooseGuidance(b, profile, warnings);
  unappliedFieldWarnings(b, { sampler }, warnings);

  const routing = chooseKind(route, b, profile, ctx.limits, warnings);
  if (sdUpscale && routing.kind !== 'img2img') {
    throw new RequestError(422, 'script_name', `script_name: SD upscale needs an img2img model; ${profile.id} edits from references`);
  }
  const options = ctx.options ?? {};
  const tagged = parseLoraTags(b.prompt ?? '', warnings);
  let loras = resolveLoras(tagged.tags, lists);
  if (b.disable_extra_networks === true && loras.length > 0) {
    warnings.push('disable_extra_networks: LoRA tags removed from the prompt and not applied');
    loras = [];
  }
  const hires =
    route === 'txt2img'
      ? chooseHires(
          b,
          {
            profile,
            size,
            steps,
            sampling: { sampler, scheduler },
            lists,
            fit: (field, w, h) => fitSize(profile, ctx.limits, { width: field, height: field }, { width: w, height: h }, warnings),
          },
          warnings,
        )
      : undefined;
  const output = chooseOutputFormat(b, options, warnings);
  overrideWarnings(b, options, warnings);
  const resizeMode = route === 'img2img' && routing.kind === 'img2img' ? (sdUpscale ? 0 : chooseResizeMode(b)) : undefined;
  const denoise = routing.kind === 'img2img' ? inRange(b.denoising_strength ?? DEFAULT_DENOISE, 0, 1, 'denoising_strength') : 1;

  // Decoding last: every cheap check has passed.
  const imageInputs: ImageSetInput = {
    ...(routing.init !== undefined ? { init: routing.init } : {}),
    ...(routing.mask !== undefined
      ? { mask: { value: routing.mask, field: 'mask', invert: (b.inpainting_mask_invert ?? 0) !== 0, round: b.mask_round ?? true } }
      : {}),
    refs: routing.refs,
  };
  return {
    route,
    b,
    warnings,
    profile,
    sampler,
    scheduler,
    batchSize,
    nIter,
    seed,
    size,
    steps,
    cfg,
    guidance,
    negativePrompt,
    routing,
    tagged,
    loras,
    hires,
    output,
    resizeMode,
    denoise,
    imageInputs,
    schedule,
    custom,
    sdUpscale,
  };
}

function finishRequest(plan: Plan, decoded: DecodedImageSet, ctx: NormalizeContext): NormalizedRequest {
  const {
    route,
    b,
    warnings,
    profile,
    sampler,
    scheduler,
    batchSize,
    nIter,
    seed,
    steps,
    cfg,
    guidance,
    negativePrompt,
    routing,
    tagged,
    loras,
    hires,
    output,
    resizeMode,
    denoise,
    schedule,
    custom,
    sdUpscale,
  } = plan;
  const images = new Map<string, DecodedImage>();
  const keep = (d: DecodedImage): BlobRef => {
    if (!images.has(d.ref.sha256)) images.set(d.ref.sha256, d);
    return d.ref;
  };
  const initImage = decoded.init && keep(decoded.init);
  const mask = decoded.mask && keep(decoded.mask);
  const extraImages = decoded.refs.map(keep);
  const inpaint = mask ? chooseInpaint(b, warnings) : undefined;
  const upscaled = sdUpscale && decoded.init ? sdUpscaleOutput(sdUpscale, decoded.init.ref, plan.size, { profile, limits: ctx.limits, warnings }) : undefined;
  const size = upscaled?.size ?? plan.size;

  const request: RenderRequest = {
    kind: routing.kind,
    model: profile.id,
    prompt: tagged.prompt,
    negativePrompt,
    seed,
    steps,
    cfg,
    ...(guidance !== undefined ? { guidance } : {}),
    sampler,
    scheduler,
    ...(schedule?.sigmas ? { sigmas: schedule.sigmas } : {}),
    width: size.width,
    height: size.height,
    batchSize,
    nIter,
    denoise,
    ...(initImage ? { initImage } : {}),
    ...(mask ? { mask } : {}),
    ...(inpaint ? { inpaint } : {}),
    extraImages,
    ...(loras.length > 0 ? { loras } : {}),
    ...(hires ? { hires } : {}),
    ...(resizeMode ? { resizeMode } : {}),
    ...(upscaled ? { sdUpscale: upscaled.sdUpscale } : sdUpscale ? { sdUpscale } : {}),
    ...(output ? { output } : {}),
    report: {
      samplerName: samplerLabel(sampler),
      scheduler: custom ? custom.label : schedulerLabel(scheduler),
      requestedWidth: size.requestedWidth,
      requestedHeight: size.requestedHeight,
    },
  };
  if (warnings.length > 0) ctx.log?.('a1111 request: ignored or adjusted inputs', { model: profile.id, warnings });
  return { request, images: [...images.values()], warnings, parameters: buildParameters(route, b, request) };
}

function parseBody(route: A1111Route, body: Record<string, unknown>): A1111Body {
  const parsed = schemaFor(route).safeParse(body);
  if (parsed.success) return parsed.data;
  throw requestErrorFromIssues(parsed.error.issues, { status: 422, value: body });
}

function rejectUnsupportedScripts(b: A1111Body): void {
  // A1111 answers an unknown script with 422; SD upscale is the one script here (GET /sdapi/v1/scripts).
  if (!present(b.script_name) || isSdUpscale(b)) return;
  throw new RequestError(422, 'script_name', `script_name: Script '${b.script_name}' not found (the only script is 'sd upscale', on img2img)`);
}

function chooseModel(b: A1111Body, ctx: NormalizeContext): ModelProfile {
  const fromOverride = b.override_settings?.sd_model_checkpoint;
  let name: string;
  let field: string;
  if (present(b.model)) {
    name = b.model;
    field = 'model';
  } else if (fromOverride !== undefined && fromOverride !== null && fromOverride !== '') {
    if (typeof fromOverride !== 'string') {
      throw new RequestError(
        422,
        'override_settings.sd_model_checkpoint',
        `override_settings.sd_model_checkpoint: expected a string, got ${describeValue(fromOverride)}`,
      );
    }
    name = fromOverride;
    field = 'override_settings.sd_model_checkpoint';
  } else {
    const profile = resolveModel(ctx.defaultModel);
    // A bad default is a server configuration fault, not the client's.
    if (!profile) throw new Error(`configured default model "${ctx.defaultModel}" is not a known model`);
    return profile;
  }
  const profile = resolveModel(name);
  if (!profile || profile.kinds.includes('video')) {
    const known = knownModelNames();
    const why = profile ? `${profile.id} is a video model (use POST /v1/videos)` : `unknown model "${name}"`;
    throw new RequestError(400, field, `${field}: ${why}; known models: ${known.join(', ')}`, {
      known,
      titles: listImageProfiles().map((p) => p.title),
    });
  }
  return profile;
}

function chooseBatch(b: A1111Body, limits: NormalizeLimits): { count: number; batchSize: number; nIter: number } {
  const batchSize = b.batch_size ?? 1;
  const nIterField = b.n_iter !== undefined ? 'n_iter' : 'batch_count';
  const nIter = b.n_iter ?? b.batch_count ?? 1;
  if (batchSize < 1) throw new RequestError(400, 'batch_size', `batch_size: must be at least 1, got ${batchSize}`);
  if (nIter < 1) throw new RequestError(400, nIterField, `${nIterField}: must be at least 1, got ${nIter}`);
  const count = batchSize * nIter;
  if (count > limits.maxBatch) {
    throw new RequestError(
      400,
      'batch_size',
      `batch_size: ${batchSize} × n_iter ${nIter} = ${count} images exceeds the limit of ${limits.maxBatch} per request`,
      { limit: limits.maxBatch },
    );
  }
  return { count, batchSize, nIter };
}

function chooseSeed(b: A1111Body, count: number, random: () => number): number {
  const s = b.seed;
  if (s === undefined || s === -1) return Math.floor(random() * RANDOM_SEED_BOUND);
  if (s < 0) throw new RequestError(400, 'seed', `seed: must be -1 (random) or 0..${MAX_SEED}, got ${s}`);
  if (s > MAX_SEED - (count - 1)) {
    throw new RequestError(400, 'seed', `seed: ${s} is too large; seed + ${count - 1} (the last image of the batch) must be at most ${MAX_SEED}`);
  }
  return s;
}

interface Routing {
  kind: RenderKind;
  init?: { value: string; field: string };
  mask?: string;
  refs: { value: string; field: string }[];
}

/**
 * Route by capability. `extra_images` make a request an instruction edit (on img2img the init image
 * becomes the first reference). On an instruction-edit model, which has no denoise-from-init img2img, a plain
 * img2img's `init_images` are the edit source (reference conditioning, the prompt is the instruction) and a
 * plain txt2img renders text-to-image through the same model: what standard A1111 clients send works.
 */
function chooseKind(route: A1111Route, b: A1111Body, profile: ModelProfile, limits: NormalizeLimits, warnings: string[]): Routing {
  const can = (k: RenderKind) => profile.kinds.includes(k);
  const extra = (b.extra_images ?? []).map((value, i) => ({ value, field: `extra_images.${i}` }));
  const editModels = () =>
    listProfiles()
      .filter((p) => p.kinds.includes('edit'))
      .map((p) => p.id)
      .join(', ');

  if (extra.length > 0 && !can('edit')) {
    throw new RequestError(
      400,
      'extra_images',
      `extra_images: ${profile.id} cannot use reference images (it is not an instruction-edit model); edit models: ${editModels()}`,
    );
  }

  let init: { value: string; field: string } | undefined;
  if (route === 'img2img') {
    const inits = b.init_images ?? [];
    if (inits.length === 0) {
      // 404 and this wording are A1111's; kept for client compatibility.
      throw new RequestError(404, 'init_images', 'Init image not found: init_images is required for img2img');
    }
    if (inits.length > 1) {
      throw new RequestError(400, 'init_images', `init_images: ${inits.length} images sent; one init image per request is supported`);
    }
    init = { value: inits[0]!, field: 'init_images.0' };
  }

  const editFromInit = route === 'img2img' && !can('img2img') && can('edit');
  if (extra.length === 0 && !editFromInit) {
    const kind: RenderKind = route;
    if (!can(kind)) {
      throw new RequestError(
        400,
        'extra_images',
        `extra_images: ${profile.id} is an instruction-edit model and needs the image(s) to edit in extra_images (the prompt is the instruction); a plain ${route} is not supported on it`,
      );
    }
    const mask = route === 'img2img' && present(b.mask) ? b.mask : undefined;
    return { kind, ...(init ? { init } : {}), ...(mask !== undefined ? { mask } : {}), refs: [] };
  }
  if (editFromInit) {
    warnings.push(`init_images: used as the edit source of ${profile.id} (reference conditioning; the prompt is the instruction)`);
    if (b.denoising_strength !== undefined && b.denoising_strength !== DEFAULT_DENOISE && b.denoising_strength !== 1) {
      warnings.push(`denoising_strength: ${b.denoising_strength} not applied; ${profile.id} edits from a reference, not from a partly noised init image`);
    }
  }

  if (route === 'img2img' && present(b.mask)) {
    throw new RequestError(400, 'mask', `mask: instruction edits take no mask (${profile.id} edits what the prompt says)`);
  }
  const refs = init ? [init, ...extra] : extra;
  const max = Math.min(profile.maxExtraImages, limits.maxExtraImages);
  if (refs.length > max) {
    throw new RequestError(
      400,
      'extra_images',
      `extra_images: ${refs.length} reference images${init ? ' (counting init_images.0)' : ''} exceed the limit of ${max} for ${profile.id}`,
      { limit: max },
    );
  }
  return { kind: 'edit', refs };
}

/** The init image's size, for a mask to match (mask.ts). */
