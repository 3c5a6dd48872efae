/**
 * Video API fields → a fully resolved RenderRequest of kind `video` (docs/video-api.md).
 * Everything the render depends on is decided here: model, task, size on the model's grid, frame count on
 * its frame grid, fps, steps, guidance, shift, seed, and the decoded conditioning images. Bad input throws
 * a RequestError naming the field before anything is stored or started; cheap checks run before decoding.
 */
import type { DecodedImage } from '../../images/decode.ts';
import type { ModelProfile } from '../../models/profile.ts';
import { knownModelNames, resolveModel } from '../../models/registry.ts';
import { videoCaps } from '../../models/video.ts';
import type { VideoRender, VideoSpec } from '../../contracts/render.ts';
import { RequestError, describeValue, requestErrorFromIssues } from '../../errors/request-error.ts';
import { decodeImagesOffLoop } from '../../bytes/off-loop.ts';
import { extraParamsSchema, videoFieldsSchema, type ExtraParams, type VideoFields } from './schema.ts';
import { checkUploadType, collectImageInputs, decodeInput, type ImageInput, type UploadedFile } from './image-inputs.ts';
import { assignRoles, chooseTask } from './choose-task.ts';
import { chooseCfg, chooseFps, chooseFrames, chooseSeed, chooseShift, chooseSize, chooseSteps, gridLabel } from './video-parameters.ts';

export interface VideoNormalizeContext {
  defaultModel: string;
  random: () => number;
  limits: { maxImageBytes: number; maxImagePixels: number };
}

export interface NormalizedVideo {
  request: VideoRender;
  /** Distinct conditioning images to store once normalisation has fully succeeded. */
  images: DecodedImage[];
  warnings: string[];
  profile: ModelProfile;
}

/** The fields checked, then the images decoded on this thread (tests, tools). The service calls normalizeVideoRequestOffLoop. */
export function normalizeVideoRequest(body: unknown, files: UploadedFile[], ctx: VideoNormalizeContext): NormalizedVideo {
  const steps = videoSteps(body, files, ctx);
  const inputs = steps.next().value as ImageInput[];
  return steps.next(inputs.map((i) => decodeInput(i, ctx.limits))).value as NormalizedVideo;
}

/** normalizeVideoRequest with the images decoded and checked in a byte worker (src/bytes/), off the event loop. */
export async function normalizeVideoRequestOffLoop(body: unknown, files: UploadedFile[], ctx: VideoNormalizeContext): Promise<NormalizedVideo> {
  const steps = videoSteps(body, files, ctx);
  const inputs = steps.next().value as ImageInput[];
  for (const i of inputs) checkUploadType(i);
  const sources = inputs.map((i) => (i.value !== undefined ? { field: i.field, value: i.value } : { field: i.field, bytes: i.file!.bytes }));
  return steps.next(await decodeImagesOffLoop(sources, ctx.limits)).value as NormalizedVideo;
}

/** Every check of the fields; yields the images to decode once the cheap checks have passed, and gets them back decoded. */
function* videoSteps(body: unknown, files: UploadedFile[], ctx: VideoNormalizeContext): Generator<ImageInput[], NormalizedVideo, DecodedImage[]> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RequestError(422, '', `request body must be an object of fields, got ${describeValue(body)}`);
  }
  const f = parseFields(body as Record<string, unknown>);
  const warnings: string[] = [];
  const profile = chooseModel(f, ctx);
  const caps = videoCaps(profile);
  const prompt = f.prompt?.trim() ? f.prompt : undefined;
  if (!prompt) throw new RequestError(400, 'prompt', 'prompt: required (a non-empty string)');
  const extra = parseExtraParams(f.extra_params);

  // Conditioning images in request order: input_reference first, then input_references.
  const inputs = collectImageInputs(f, files);
  const task = chooseTask(profile, caps, extra, inputs);
  const fps = chooseFps(f, caps);
  const { frames, requestedFrames, requestedSeconds } = chooseFrames(f, extra, caps, fps);
  const steps = chooseSteps(f, profile, caps);
  const cfg = chooseCfg(f, profile, warnings);
  const { shift, audioShift } = chooseShift(f, extra, profile);
  const seed = chooseSeed(f, ctx.random);
  const negativePrompt = profile.cfgMode === 'free' ? (f.negative_prompt ?? '') : '';
  if (profile.cfgMode !== 'free' && f.negative_prompt) warnings.push(`negative_prompt ignored: ${profile.id} is CFG-distilled and has no negative branch`);

  // Decode only now: every cheap check has passed.
  const decoded = yield inputs;
  const roles = assignRoles(task, extra, decoded, inputs);
  const sizeSource = roles.firstFrame ?? roles.lastFrame;
  const size = chooseSize(f, profile, sizeSource, warnings);

  const video: VideoSpec = {
    task: task.id,
    frames,
    fps,
    ...(shift !== undefined ? { shift } : {}),
    ...(audioShift !== undefined ? { audioShift } : {}),
    ...(roles.firstFrame ? { firstFrame: roles.firstFrame } : {}),
    ...(roles.lastFrame ? { lastFrame: roles.lastFrame } : {}),
    references: roles.references,
    requested: {
      ...(requestedFrames !== undefined ? { frames: requestedFrames } : {}),
      ...(requestedSeconds !== undefined ? { seconds: requestedSeconds } : {}),
      ...(size.requested ? { width: size.requested.width, height: size.requested.height } : {}),
    },
  };
  if (requestedFrames !== undefined && requestedFrames !== frames) {
    warnings.push(`${requestedFrames} frames snapped to ${frames} (${profile.id} renders ${gridLabel(caps)} frames)`);
  }
  const d = profile.defaults;
  const request: VideoRender = {
    kind: 'video',
    model: profile.id,
    prompt,
    negativePrompt,
    seed,
    steps,
    cfg,
    sampler: d.sampler,
    scheduler: d.scheduler,
    width: size.width,
    height: size.height,
    batchSize: 1,
    nIter: 1,
    video,
  };
  const distinct = new Map(decoded.map((i) => [i.ref.sha256, i]));
  return { request, images: [...distinct.values()], warnings, profile };
}

function parseFields(body: Record<string, unknown>): VideoFields {
  const r = videoFieldsSchema.safeParse(body);
  if (r.success) return r.data;
  throw requestErrorFromIssues(r.error.issues);
}

function chooseModel(f: VideoFields, ctx: VideoNormalizeContext): ModelProfile {
  const name = f.model?.trim() ? f.model.trim() : ctx.defaultModel;
  const profile = resolveModel(name);
  const known = knownModelNames('video');
  if (!profile) {
    if (!f.model) throw new Error(`configured default video model "${ctx.defaultModel}" is not a known model`);
    throw new RequestError(400, 'model', `model: unknown model "${name}"; video models: ${known.join(', ')}`, { known });
  }
  if (!profile.video) {
    throw new RequestError(400, 'model', `model: ${profile.id} is an image model (use /sdapi/v1/txt2img); video models: ${known.join(', ')}`, { known });
  }
  return profile;
}

function parseExtraParams(raw: VideoFields['extra_params']): ExtraParams {
  if (raw === undefined || raw === '') return {};
  let obj: unknown = raw;
  if (typeof raw === 'string') {
    try {
      obj = JSON.parse(raw);
    } catch {
      throw new RequestError(400, 'extra_params', 'extra_params: not valid JSON (send a JSON object, e.g. {"task":"fl2va"})');
    }
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new RequestError(400, 'extra_params', `extra_params: must be a JSON object, got ${describeValue(obj)}`);
  }
  const r = extraParamsSchema.safeParse(obj);
  if (!r.success) {
    throw requestErrorFromIssues(r.error.issues, { pathPrefix: ['extra_params'] });
  }
  return r.data;
}
