/**
 * Video API fields → a fully resolved RenderRequest of kind `video` (docs/video-api.md).
 * Everything the render depends on is decided here: model, task, size on the model's grid, frame count on
 * its frame grid, fps, steps, guidance, shift, seed, and the decoded conditioning images. Bad input throws
 * a RequestError naming the field before anything is stored or started; cheap checks run before decoding.
 */
import { checkImageBytes, decodeImageInput, type DecodedImage } from '../../images/decode.ts';
import type { ModelProfile, VideoCapabilities } from '../../models/profile.ts';
import { knownModelNames, resolveModel } from '../../models/registry.ts';
import { framesForSeconds, secondsLabel, sizeFromImage, snapFrames, videoCaps } from '../../models/video.ts';
import { fitOnGrid } from '../../models/fit-size.ts';
import type { BlobRef, RenderRequest, VideoSpec } from '../../render/types.ts';
import { RequestError, describeValue, requestErrorFromIssues } from '../../errors/request-error.ts';
import { MAX_SEED } from '../a1111/normalize.ts';
import { decodeImagesOffLoop } from '../../bytes/off-loop.ts';
import { extraParamsSchema, videoFieldsSchema, type ExtraParams, type VideoFields } from './schema.ts';
import { modelsWithTask, videoTasksOf, type VideoTaskSpec } from '../../models/video-tasks.ts';

/** An image sent as a multipart file part (`input_reference`, `input_references`). */
export interface UploadedFile {
  field: 'input_reference' | 'input_references';
  bytes: Buffer;
  mimetype?: string;
  filename?: string;
}

export interface VideoNormalizeContext {
  defaultModel: string;
  random: () => number;
  limits: { maxImageBytes: number; maxImagePixels: number };
}

export interface NormalizedVideo {
  request: RenderRequest;
  /** Distinct conditioning images to store once normalisation has fully succeeded. */
  images: DecodedImage[];
  warnings: string[];
  profile: ModelProfile;
}

/** vLLM-Omni's ranges (protocol/videos.py): steps 1-200, guidance 0-20. */
const MAX_API_STEPS = 200;
const MAX_GUIDANCE = 20;
const MAX_SHIFT = 100;
const RANDOM_SEED_BOUND = 4294967294;

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
  const request: RenderRequest = {
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
    denoise: 1,
    extraImages: [],
    report: {
      samplerName: d.sampler,
      scheduler: d.scheduler,
      requestedWidth: size.requested?.width ?? size.width,
      requestedHeight: size.requested?.height ?? size.height,
    },
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

interface ImageInput {
  field: string;
  value?: string;
  file?: UploadedFile;
}

function collectImageInputs(f: VideoFields, files: UploadedFile[]): ImageInput[] {
  const out: ImageInput[] = [];
  const firstFiles = files.filter((x) => x.field === 'input_reference');
  if (firstFiles.length > 1 || (firstFiles.length === 1 && f.input_reference !== undefined)) {
    throw new RequestError(400, 'input_reference', 'input_reference: send one image (use input_references for more)');
  }
  if (firstFiles[0]) out.push({ field: 'input_reference', file: firstFiles[0] });
  else if (f.input_reference !== undefined && f.input_reference !== '') out.push({ field: 'input_reference', value: f.input_reference });
  let i = 0;
  for (const v of f.input_references ?? []) out.push({ field: `input_references.${i++}`, value: v });
  for (const file of files.filter((x) => x.field === 'input_references')) out.push({ field: `input_references.${i++}`, file });
  return out;
}

function decodeInput(input: ImageInput, limits: VideoNormalizeContext['limits']): DecodedImage {
  if (input.value !== undefined) return decodeImageInput(input.value, input.field, limits);
  checkUploadType(input);
  return checkImageBytes(input.file!.bytes, input.field, limits);
}

function checkUploadType(input: ImageInput): void {
  const type = input.file?.mimetype;
  if (type && /^(video|audio)\//i.test(type)) {
    throw new RequestError(400, input.field, `${input.field}: ${type} is not an image; only image references (PNG, JPEG, WebP) are supported`);
  }
}

function gridLabel(caps: VideoCapabilities): string {
  return `${caps.frameGrid.step}k+${caps.frameGrid.offset}`;
}

/**
 * The task and what the images are, from what the model's family declares (`VideoTaskSpec`): a task named in
 * `extra_params.task` must be one of the model's; without one, no images means the first text-only task,
 * images mean the model's only image task, or its first-frames task when the images cannot be references.
 */
function chooseTask(profile: ModelProfile, caps: VideoCapabilities, extra: ExtraParams, inputs: ImageInput[]): VideoTaskSpec {
  const refs = inputs.filter((i) => i.field.startsWith('input_references'));
  const tasks = videoTasksOf(profile);
  const imageTasks = tasks.filter((t) => t.images !== 'none');
  let task: VideoTaskSpec | undefined;
  if (extra.task !== undefined) {
    task = tasks.find((t) => t.id === extra.task);
    if (!task) {
      throw new RequestError(400, 'extra_params.task', `extra_params.task: must be one of ${caps.tasks.join(', ')} for ${profile.id}, got ${JSON.stringify(extra.task)}`);
    }
  } else if (inputs.length === 0 && extra.frame_indices === undefined) {
    task = tasks.find((t) => t.images === 'none') ?? tasks[0]!;
  } else if (imageTasks.length === 1) {
    task = imageTasks[0]!;
  } else if (refs.length > 0) {
    const kinds = imageTasks.map((t) => `"${t.id}": ${t.images === 'frames' ? 'first/last frames' : 'references'}`).join(', ');
    throw new RequestError(400, refs[0]!.field, `input_references: say what the images are with extra_params.task (${kinds})`);
  } else {
    task = imageTasks.find((t) => t.images === 'frames') ?? imageTasks[0]!;
  }
  if (!task) throw new Error(`model ${profile.id} declares no video task`);
  checkTaskImages(profile, task, tasks, extra, inputs, refs);
  return task;
}

function checkTaskImages(profile: ModelProfile, task: VideoTaskSpec, tasks: VideoTaskSpec[], extra: ExtraParams, inputs: ImageInput[], refs: ImageInput[]): void {
  const framesTasks = tasks.filter((t) => t.images === 'frames' && (t.positions?.length ?? 0) > 1).map((t) => t.id);
  if (extra.frame_indices !== undefined && task.images !== 'frames') {
    throw new RequestError(400, 'extra_params.frame_indices', `extra_params.frame_indices: only ${framesTasks.join(', ') || 'a first/last frame task'} places images as first/last frames (task is ${task.id})`);
  }
  if (task.images === 'none') {
    if (inputs.length > 0) {
      const imageTasks = tasks.filter((t) => t.images !== 'none').map((t) => `"${t.id}"`);
      throw new RequestError(400, inputs[0]!.field, `${inputs[0]!.field}: ${task.id} takes no images${imageTasks.length ? ` (use extra_params.task ${imageTasks.join(' or ')})` : ''}`);
    }
    return;
  }
  if (task.images === 'references') {
    if (inputs.length === 0) throw new RequestError(400, 'input_references', `input_references: ${task.id} needs at least one reference image`);
    if (inputs.length > profile.maxExtraImages) {
      throw new RequestError(400, inputs[profile.maxExtraImages]!.field, `input_references: ${task.id} takes at most ${profile.maxExtraImages} reference images`);
    }
    return;
  }
  const positions = task.positions ?? [0];
  if (positions.length === 1) {
    // A single start image: sent as input_reference; reference images are another task's.
    if (refs.length > 0) {
      const others = modelsWithTask('references');
      throw new RequestError(400, refs[0]!.field, `input_references: ${profile.id} takes one start image in input_reference${others.length ? `; reference images are for ${others.join(', ')}` : ''}`);
    }
    const bad = extra.frame_indices?.find((i) => !positions.includes(i as 0 | -1));
    if (bad !== undefined) {
      const others = modelsWithTask('frames', (t) => (t.positions?.length ?? 0) > 1);
      throw new RequestError(400, 'extra_params.frame_indices', `extra_params.frame_indices: ${profile.id} takes only a first frame (input_reference)${others.length ? `; last frames are for ${others.join(', ')}` : ''}`);
    }
  }
  if (inputs.length === 0) throw new RequestError(400, 'input_reference', `input_reference: ${task.id} needs a ${positions.length > 1 ? 'first or last frame' : 'start'} image (input_reference${positions.length > 1 ? ', input_references' : ''})`);
  if (inputs.length > positions.length) {
    const n = positions.length === 2 ? 'two images (first and last frame)' : `${positions.length} image(s)`;
    throw new RequestError(400, inputs[positions.length]!.field, `${inputs[positions.length]!.field}: ${task.id} takes at most ${n}`);
  }
}

function assignRoles(task: VideoTaskSpec, extra: ExtraParams, decoded: DecodedImage[], inputs: ImageInput[]): { firstFrame?: BlobRef; lastFrame?: BlobRef; references: BlobRef[] } {
  if (task.images === 'references') return { references: decoded.map((d) => d.ref) };
  if (task.images !== 'frames') return { references: [] };
  const positions = task.positions ?? [0];
  const indices = extra.frame_indices ?? (decoded.length === 2 ? [0, -1] : [0]);
  const valid = positions.length > 1 ? ['0', '-1', '0,-1'] : ['0'];
  if (!valid.includes(indices.join(','))) {
    const shown = positions.length > 1 ? '[0], [-1] or [0, -1]' : '[0]';
    throw new RequestError(400, 'extra_params.frame_indices', `extra_params.frame_indices: must be ${shown}, got ${JSON.stringify(indices)}`);
  }
  if (indices.length !== decoded.length) {
    const field = decoded.length > indices.length ? inputs[indices.length]!.field : 'extra_params.frame_indices';
    throw new RequestError(400, field, `${field}: ${decoded.length} image(s) but frame_indices ${JSON.stringify(indices)} places ${indices.length}`);
  }
  const out: { firstFrame?: BlobRef; lastFrame?: BlobRef; references: BlobRef[] } = { references: [] };
  indices.forEach((idx, i) => {
    if (idx === 0) out.firstFrame = decoded[i]!.ref;
    else out.lastFrame = decoded[i]!.ref;
  });
  return out;
}

function chooseFps(f: VideoFields, caps: VideoCapabilities): number {
  const fps = f.fps ?? caps.defaultFps;
  if (!Number.isInteger(fps) || fps < caps.minFps || fps > caps.maxFps) {
    const range = caps.minFps === caps.maxFps ? `${caps.minFps}` : `an integer in ${caps.minFps}..${caps.maxFps}`;
    throw new RequestError(400, 'fps', `fps: ${fps} is out of range; this model renders at ${range} fps`);
  }
  return fps;
}

function chooseFrames(f: VideoFields, extra: ExtraParams, caps: VideoCapabilities, fps: number): { frames: number; requestedFrames?: number; requestedSeconds?: string } {
  const minS = secondsLabel(caps.minFrames, fps);
  const maxS = secondsLabel(caps.maxFrames, fps);
  let requested: number;
  let field: string;
  let requestedSeconds: string | undefined;
  if (f.num_frames !== undefined) {
    requested = f.num_frames;
    field = 'num_frames';
  } else if (f.seconds !== undefined || extra.duration !== undefined) {
    field = f.seconds !== undefined ? 'seconds' : 'extra_params.duration';
    const seconds = (f.seconds ?? extra.duration)!;
    if (!(seconds > 0)) throw new RequestError(400, field, `${field}: must be a positive number of seconds`);
    requestedSeconds = String(seconds);
    requested = framesForSeconds(seconds, fps);
  } else {
    return { frames: caps.defaultFrames };
  }
  const frames = snapFrames(Math.max(1, requested), caps.frameGrid);
  if (requested < 1 || frames < caps.minFrames || frames > caps.maxFrames) {
    throw new RequestError(
      400,
      field,
      `${field}: ${requested} frames is out of range; this model renders ${caps.minFrames}..${caps.maxFrames} frames (${minS}..${maxS} s at ${fps} fps) on its ${gridLabel(caps)} grid`,
    );
  }
  return { frames, requestedFrames: requested, ...(requestedSeconds !== undefined ? { requestedSeconds } : {}) };
}

function chooseSteps(f: VideoFields, profile: ModelProfile, caps: VideoCapabilities): number {
  if (f.num_inference_steps === undefined) return profile.defaults.steps;
  const n = f.num_inference_steps;
  const min = caps.sigmaPointSteps ? 2 : 1;
  if (n < min || n > MAX_API_STEPS) throw new RequestError(400, 'num_inference_steps', `num_inference_steps: must be in ${min}..${MAX_API_STEPS}, got ${n}`);
  // H3's API counts sigma points (an 8-step turbo is requested as 9); ComfyUI's BasicScheduler counts steps.
  return caps.sigmaPointSteps ? n - 1 : n;
}

function chooseCfg(f: VideoFields, profile: ModelProfile, warnings: string[]): number {
  if (f.guidance_scale === undefined) return profile.defaults.cfg;
  const g = f.guidance_scale;
  if (g < 0 || g > MAX_GUIDANCE) throw new RequestError(400, 'guidance_scale', `guidance_scale: must be in 0..${MAX_GUIDANCE}, got ${g}`);
  if (profile.cfgMode !== 'free') {
    warnings.push(`guidance_scale ignored: ${profile.id} is CFG-distilled (BasicGuider)`);
    return profile.defaults.cfg;
  }
  return g;
}

function chooseShift(f: VideoFields, extra: ExtraParams, profile: ModelProfile): { shift?: number; audioShift?: number } {
  const check = (v: number | undefined, field: string): number | undefined => {
    if (v === undefined) return undefined;
    if (!(v > 0) || v > MAX_SHIFT) throw new RequestError(400, field, `${field}: must be in (0, ${MAX_SHIFT}], got ${v}`);
    return v;
  };
  const shift = check(f.flow_shift, 'flow_shift');
  const audioShift = check(extra.audio_flow_shift, 'extra_params.audio_flow_shift');
  if (audioShift !== undefined && !profile.video?.audio) {
    throw new RequestError(400, 'extra_params.audio_flow_shift', `extra_params.audio_flow_shift: ${profile.id} renders no audio`);
  }
  if (audioShift !== undefined && shift === undefined && profile.defaults.shift !== undefined) {
    // A sigma-shift node that sets both (H3): keep the video shift at the model's default beside the audio one.
    return { shift: profile.defaults.shift, audioShift };
  }
  return { ...(shift !== undefined ? { shift } : {}), ...(audioShift !== undefined ? { audioShift } : {}) };
}

function chooseSeed(f: VideoFields, random: () => number): number {
  const s = f.seed;
  if (s === undefined || s === -1) return Math.floor(random() * RANDOM_SEED_BOUND);
  if (s < 0 || s > MAX_SEED) throw new RequestError(400, 'seed', `seed: must be -1 (random) or in 0..${MAX_SEED}, got ${s}`);
  return s;
}

function chooseSize(
  f: VideoFields,
  profile: ModelProfile,
  image: BlobRef | undefined,
  warnings: string[],
): { width: number; height: number; requested?: { width: number; height: number } } {
  let requested: { width: number; height: number } | undefined;
  let field = 'size';
  if (f.size !== undefined && f.size !== '') {
    // vLLM-Omni: `size` (pattern ^\d+x\d+$) overrides width/height.
    const m = /^\s*(\d+)\s*[xX×]\s*(\d+)\s*$/.exec(f.size);
    if (!m) throw new RequestError(400, 'size', `size: must be WIDTHxHEIGHT, e.g. "1280x704", got ${JSON.stringify(f.size)}`);
    requested = { width: Number(m[1]), height: Number(m[2]) };
  } else if (f.width !== undefined || f.height !== undefined) {
    if (f.width === undefined || f.height === undefined) {
      const missing = f.width === undefined ? 'width' : 'height';
      throw new RequestError(400, missing, `${missing}: send width and height together (or size "WxH")`);
    }
    requested = { width: f.width, height: f.height };
    field = 'width';
  }
  if (!requested) {
    if (image?.width && image.height) return sizeFromImage(profile, { width: image.width, height: image.height });
    return { width: profile.defaults.width, height: profile.defaults.height };
  }
  // The nearest grid size inside the budget (the OpenAI SDK's 1280x720 is 1280x704 on a 32 px grid);
  // larger sizes shrink keeping their aspect. Refused only when nothing fits.
  const fit = fitOnGrid(requested.width, requested.height, profile);
  if (!fit) {
    throw new RequestError(
      400,
      field,
      `${field}: ${requested.width}x${requested.height} cannot be rendered by ${profile.id}: sides ${profile.minSide}..${profile.maxSide} px on a ${profile.grid} px grid, at most ${profile.maxPixels} pixels (e.g. ${profile.defaults.width}x${profile.defaults.height})`,
    );
  }
  const { width, height } = fit;
  if (width !== requested.width || height !== requested.height) {
    const why = fit.scaledDown ? `scaled down to fit ${profile.id}'s ${profile.maxPixels} pixel budget and ${profile.maxSide} px sides` : `snapped to ${profile.id}'s ${profile.grid} px grid within its ${profile.maxPixels} pixel budget`;
    warnings.push(`${field}: ${requested.width}x${requested.height} ${why}: rendering ${width}x${height}`);
  }
  return { width, height, requested };
}
