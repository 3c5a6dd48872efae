/**
 * The one resolver: a neutral request (neutral.ts) → a fully resolved `RenderRequest`. Everything a render
 * depends on is decided here, whatever the protocol: model, seed, defaults, sampler mapping, size snapping,
 * kind routing by the model's capabilities, decoded and checked images. Bad input throws a RequestError naming
 * the client's field (from the request's `names`) before anything is stored or started. Cheap checks run
 * before image decoding, so a wrong size fails without decoding megabytes of image.
 */
import type { BlobRef, ImageRender } from '../contracts/render.ts';
import type { SizeFieldNames } from '../contracts/history-size.ts';
import type { DecodedImage } from '../images/decode.ts';
import { decodeImageSet, type DecodedImageSet, type ImageSetInput } from '../images/image-set.ts';
import { decodeImageSetOffLoop } from '../bytes/off-loop.ts';
import type { ModelProfile } from '../models/profile.ts';
import { knownModelNames, listImageProfiles, resolveModel } from '../models/registry.ts';
import { samplerLabel, schedulerLabel, sigmaScheduleFor } from '../models/samplers.ts';
import { familyBuilder } from '../models/families/index.ts';
import { RequestError } from '../errors/request-error.ts';
import { inRange } from './fields.ts';
import { DEFAULT_DENOISE, MAX_SEED, MAX_STEPS, RANDOM_SEED_BOUND, type ResolveLimits } from './limits.ts';
import type { NeutralImageRequest } from './neutral.ts';
import { chooseGuidance, chooseSampler } from './sampling.ts';
import { chooseSize, fitSize, sizeOfImage } from './size.ts';
import { chooseHires } from './hires.ts';
import { parseLoraTags, resolveLoras } from './loras.ts';
import { chooseRouting } from './routing.ts';
import { sdUpscaleBatch, sdUpscaleOutput } from './sd-upscale.ts';
import { checkControls, controlUnits } from './controls.ts';
import type { CatalogLists } from './upscalers.ts';

export type { DecodedImage } from '../images/decode.ts';

export interface ResolveContext {
  /** Profile id (or any accepted name) used when the request names no model. */
  defaultModel: string;
  /** Uniform in [0, 1); injected so tests get fixed "random" seeds. */
  random: () => number;
  limits: ResolveLimits;
  /** ComfyUI's LoRA and upscale-model files, fetched by the protocol (LoRA tags and upscalers resolve against them). */
  catalog?: CatalogLists;
}

export interface ResolvedRequest {
  request: ImageRender;
  /** Distinct input images to store under `ref.sha256` once resolution has fully succeeded. */
  images: DecodedImage[];
  /** Ignored or adjusted inputs (the protocol's, then the resolver's), for logs and the answer. */
  warnings: string[];
  /** The client's names of the fields the submission service may refuse (renders/submit.ts). */
  fields: SizeFieldNames;
}

/** Everything but the images, then the images decoded on this thread (tests, tools). The service calls resolveImageRequestOffLoop. */
export function resolveImageRequest(r: NeutralImageRequest, ctx: ResolveContext): ResolvedRequest {
  const plan = planRequest(r, ctx);
  return finishRequest(plan, decodeImageSet(plan.imageInputs, ctx.limits), ctx);
}

/** resolveImageRequest with the images decoded and checked in a byte worker (src/bytes/), off the event loop. */
export async function resolveImageRequestOffLoop(r: NeutralImageRequest, ctx: ResolveContext): Promise<ResolvedRequest> {
  const plan = planRequest(r, ctx);
  return finishRequest(plan, await decodeImageSetOffLoop(plan.imageInputs, ctx.limits), ctx);
}

type Plan = ReturnType<typeof planRequest>;

/** The cheap half: every choice that needs no image bytes. */
function planRequest(r: NeutralImageRequest, ctx: ResolveContext) {
  const { names } = r;
  const warnings = [...r.warnings];
  const lists = ctx.catalog ?? {};
  const profile = chooseModel(r, ctx);
  const { sampler, scheduler: chosenScheduler, custom } = chooseSampler(r, profile, warnings);
  const { count, batchSize, nIter } = sdUpscaleBatch(chooseBatch(r, ctx.limits), r.sdUpscale, names.batchSize, warnings);
  const seed = chooseSeed(r, count, ctx.random);
  // SD upscale's size comes from the init image (finishRequest); the asked size is not the output's there.
  const size = chooseSize(r, profile, ctx.limits, r.sdUpscale ? [] : warnings);
  // Clients send `steps: 0` for "the default" (A1111 itself would render nothing useful).
  const steps = inRange(r.steps === undefined || r.steps === 0 ? profile.defaults.steps : r.steps, 1, MAX_STEPS, names.steps);
  const schedule = custom
    ? sigmaScheduleFor(custom.kind, custom.label, steps, { name: profile.family, sampling: familyBuilder(profile.family).sampling })
    : undefined;
  if (schedule?.approx) warnings.push(`${names.scheduler}: ${schedule.approx}`);
  // A custom schedule has no KSampler name: `scheduler` stays the model's (the hires pass and fallbacks use it).
  const scheduler = custom && !schedule?.sigmas ? 'simple' : chosenScheduler;
  const { cfg, guidance, negativePrompt } = chooseGuidance(r, profile, warnings);

  const routing = chooseRouting(r, profile, ctx.limits, warnings);
  if (r.controls) checkControls(r.controls, profile, warnings);
  if (r.sdUpscale && routing.kind !== 'img2img') {
    const field = r.sdUpscale.names.script;
    throw new RequestError(422, field, `${field}: SD upscale needs an img2img model; ${profile.id} edits from references`);
  }
  const tagged = parseLoraTags(r.prompt, names.prompt, warnings);
  let loras = resolveLoras(tagged.tags, names.prompt, lists);
  if (r.loraTags === 'strip' && loras.length > 0) loras = [];
  const hires =
    r.hires && r.route === 'txt2img'
      ? chooseHires(
          r.hires,
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
  const resizeMode = r.route === 'img2img' && routing.kind === 'img2img' ? (r.sdUpscale ? 0 : (r.resizeMode ?? 0)) : undefined;
  const denoise = routing.kind === 'img2img' ? inRange(r.denoise ?? DEFAULT_DENOISE, 0, 1, names.denoise) : 1;

  // Decoding last: every cheap check has passed.
  const imageInputs: ImageSetInput = {
    ...(routing.init !== undefined ? { init: routing.init } : {}),
    ...(routing.mask !== undefined ? { mask: { ...routing.mask.source, invert: routing.mask.invert, round: routing.mask.round } } : {}),
    refs: routing.refs,
    ...(r.controls?.length ? { controls: r.controls.map((c) => c.source) } : {}),
  };
  return {
    r,
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
    resizeMode,
    denoise,
    imageInputs,
    schedule,
    custom,
  };
}

/** The half that needs the decoded images: their references, the sizes taken from them. */
function finishRequest(plan: Plan, decoded: DecodedImageSet, ctx: ResolveContext): ResolvedRequest {
  const {
    r,
    warnings,
    profile,
    sampler,
    scheduler,
    seed,
    steps,
    cfg,
    guidance,
    negativePrompt,
    routing,
    tagged,
    loras,
    hires,
    resizeMode,
    denoise,
    schedule,
    custom,
  } = plan;
  const images = new Map<string, DecodedImage>();
  const keep = (d: DecodedImage): BlobRef => {
    if (!images.has(d.ref.sha256)) images.set(d.ref.sha256, d);
    return d.ref;
  };
  const initImage = decoded.init && keep(decoded.init);
  const mask = decoded.mask && keep(decoded.mask);
  const extraImages = decoded.refs.map(keep);
  const controls = r.controls?.length ? controlUnits(r.controls, (decoded.controls ?? []).map(keep)) : undefined;
  const inpaint = mask ? (r.inpaint ?? { maskBlur: DEFAULT_MASK_BLUR }) : undefined;
  const upscaled =
    r.sdUpscale && decoded.init ? sdUpscaleOutput(r.sdUpscale, decoded.init.ref, plan.size, { profile, limits: ctx.limits, warnings }) : undefined;
  const fromImage = r.sizeFromImage && r.width === undefined && r.height === undefined ? (initImage ?? extraImages[0]) : undefined;
  const size = upscaled?.size ?? (fromImage && sizeOfImage(fromImage, profile, ctx.limits)) ?? plan.size;

  const request: ImageRender = {
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
    batchSize: plan.batchSize,
    nIter: plan.nIter,
    denoise,
    ...(initImage ? { initImage } : {}),
    ...(mask ? { mask } : {}),
    ...(inpaint ? { inpaint } : {}),
    extraImages,
    ...(loras.length > 0 ? { loras } : {}),
    ...(hires ? { hires } : {}),
    ...(resizeMode ? { resizeMode } : {}),
    ...(upscaled ? { sdUpscale: upscaled.sdUpscale } : r.sdUpscale ? { sdUpscale: r.sdUpscale.spec } : {}),
    ...(r.output ? { output: r.output } : {}),
    ...(controls ? { controls } : {}),
    report: {
      samplerName: samplerLabel(sampler),
      scheduler: custom ? custom.label : schedulerLabel(scheduler),
      requestedWidth: size.requestedWidth,
      requestedHeight: size.requestedHeight,
    },
  };
  const fields = { batchSize: r.names.batchSize, nIter: r.names.nIter, prompt: r.names.prompt };
  return { request, images: [...images.values()], warnings, fields };
}

/** A1111's default `mask_blur`: the inpainted area is pasted back through a mask blurred by 4 px. */
const DEFAULT_MASK_BLUR = 4;

function chooseModel(r: NeutralImageRequest, ctx: ResolveContext): ModelProfile {
  const field = r.names.model;
  if (r.model === undefined || r.model.trim() === '') {
    const profile = resolveModel(ctx.defaultModel);
    // A bad default is a server configuration fault, not the client's.
    if (!profile) throw new Error(`configured default model "${ctx.defaultModel}" is not a known model`);
    return profile;
  }
  const profile = resolveModel(r.model);
  if (!profile || profile.kinds.includes('video')) {
    const known = knownModelNames();
    const why = profile ? `${profile.id} is a video model (use POST /v1/videos)` : `unknown model "${r.model}"`;
    throw new RequestError(400, field, `${field}: ${why}; known models: ${known.join(', ')}`, {
      known,
      titles: listImageProfiles().map((p) => p.title),
    });
  }
  return profile;
}

function chooseBatch(r: NeutralImageRequest, limits: ResolveLimits): { count: number; batchSize: number; nIter: number } {
  const { names } = r;
  const batchSize = r.batchSize ?? 1;
  const nIter = r.nIter ?? 1;
  if (batchSize < 1) throw new RequestError(400, names.batchSize, `${names.batchSize}: must be at least 1, got ${batchSize}`);
  if (nIter < 1) throw new RequestError(400, names.nIter, `${names.nIter}: must be at least 1, got ${nIter}`);
  const count = batchSize * nIter;
  if (count > limits.maxBatch) {
    const asked = r.nIter === undefined ? `${batchSize}` : `${batchSize} × ${names.nIter} ${nIter} = ${count}`;
    throw new RequestError(400, names.batchSize, `${names.batchSize}: ${asked} images exceeds the limit of ${limits.maxBatch} per request`, {
      limit: limits.maxBatch,
    });
  }
  return { count, batchSize, nIter };
}

function chooseSeed(r: NeutralImageRequest, count: number, random: () => number): number {
  const s = r.seed;
  const field = r.names.seed;
  if (s === undefined || s === -1) return Math.floor(random() * RANDOM_SEED_BOUND);
  if (s < 0) throw new RequestError(400, field, `${field}: must be -1 (random) or 0..${MAX_SEED}, got ${s}`);
  if (s > MAX_SEED - (count - 1)) {
    throw new RequestError(400, field, `${field}: ${s} is too large; seed + ${count - 1} (the last image of the batch) must be at most ${MAX_SEED}`);
  }
  return s;
}
