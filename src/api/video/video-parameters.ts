/** The numbers of a video render from the request's fields, checked against the model: fps, frames, steps, guidance, shift, seed and size. */
import type { ModelProfile, VideoCapabilities } from '../../models/profile.ts';
import { framesForSeconds, secondsLabel, sizeFromImage, snapFrames } from '../../models/video.ts';
import { fitOnGrid } from '../../models/fit-size.ts';
import type { BlobRef } from '../../contracts/render.ts';
import { RequestError } from '../../errors/request-error.ts';
import { MAX_SEED, RANDOM_SEED_BOUND } from '../../request/limits.ts';
import type { ExtraParams, VideoFields } from './schema.ts';

/** vLLM-Omni's ranges (protocol/videos.py): steps 1-200, guidance 0-20. */
const MAX_API_STEPS = 200;
const MAX_GUIDANCE = 20;
const MAX_SHIFT = 100;

/** The model's frame grid as written in messages: `4k+1`. */
export function gridLabel(caps: VideoCapabilities): string {
  return `${caps.frameGrid.step}k+${caps.frameGrid.offset}`;
}

export function chooseFps(f: VideoFields, caps: VideoCapabilities): number {
  const fps = f.fps ?? caps.defaultFps;
  if (!Number.isInteger(fps) || fps < caps.minFps || fps > caps.maxFps) {
    const range = caps.minFps === caps.maxFps ? `${caps.minFps}` : `an integer in ${caps.minFps}..${caps.maxFps}`;
    throw new RequestError(400, 'fps', `fps: ${fps} is out of range; this model renders at ${range} fps`);
  }
  return fps;
}

export function chooseFrames(
  f: VideoFields,
  extra: ExtraParams,
  caps: VideoCapabilities,
  fps: number,
): { frames: number; requestedFrames?: number; requestedSeconds?: string } {
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

export function chooseSteps(f: VideoFields, profile: ModelProfile, caps: VideoCapabilities): number {
  if (f.num_inference_steps === undefined) return profile.defaults.steps;
  const n = f.num_inference_steps;
  const min = caps.sigmaPointSteps ? 2 : 1;
  if (n < min || n > MAX_API_STEPS) throw new RequestError(400, 'num_inference_steps', `num_inference_steps: must be in ${min}..${MAX_API_STEPS}, got ${n}`);
  // H3's API counts sigma points (an 8-step turbo is requested as 9); ComfyUI's BasicScheduler counts steps.
  return caps.sigmaPointSteps ? n - 1 : n;
}

export function chooseCfg(f: VideoFields, profile: ModelProfile, warnings: string[]): number {
  if (f.guidance_scale === undefined) return profile.defaults.cfg;
  const g = f.guidance_scale;
  if (g < 0 || g > MAX_GUIDANCE) throw new RequestError(400, 'guidance_scale', `guidance_scale: must be in 0..${MAX_GUIDANCE}, got ${g}`);
  if (profile.cfgMode !== 'free') {
    warnings.push(`guidance_scale ignored: ${profile.id} is CFG-distilled (BasicGuider)`);
    return profile.defaults.cfg;
  }
  return g;
}

export function chooseShift(f: VideoFields, extra: ExtraParams, profile: ModelProfile): { shift?: number; audioShift?: number } {
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

export function chooseSeed(f: VideoFields, random: () => number): number {
  const s = f.seed;
  if (s === undefined || s === -1) return Math.floor(random() * RANDOM_SEED_BOUND);
  if (s < 0 || s > MAX_SEED) throw new RequestError(400, 'seed', `seed: must be -1 (random) or in 0..${MAX_SEED}, got ${s}`);
  return s;
}

export function chooseSize(
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
    const why = fit.scaledDown
      ? `scaled down to fit ${profile.id}'s ${profile.maxPixels} pixel budget and ${profile.maxSide} px sides`
      : `snapped to ${profile.id}'s ${profile.grid} px grid within its ${profile.maxPixels} pixel budget`;
    warnings.push(`${field}: ${requested.width}x${requested.height} ${why}: rendering ${width}x${height}`);
  }
  return { width, height, requested };
}
