/**
 * Video rules shared by the front and the builders: frame grids, durations and sizes. Pure (no I/O), so
 * the workflow sandbox may import it.
 */
import type { VideoSpec } from '../contracts/render.ts';
import type { FrameGrid, ModelProfile, VideoCapabilities } from './profile.ts';

/**
 * A frame count on the grid `offset + step·k`. `down` is vLLM-Omni's Wan rule, n → floor(n/4)·4+1 when
 * n mod 4 ≠ 1 (5 s × 24 = 120 → 121); `up` is H3's `align_frame_count`, the next 17k+5 at or above n
 * (96 → 107, 120 → 124). Never below `offset`.
 */
export function snapFrames(n: number, grid: FrameGrid): number {
  const { step, offset } = grid;
  if (n <= offset) return offset;
  if ((n - offset) % step === 0) return n;
  return grid.round === 'up' ? offset + Math.ceil((n - offset) / step) * step : Math.floor(n / step) * step + offset;
}

/** vLLM-Omni: `num_frames = seconds × fps` when only `seconds` is sent (fractional seconds rounded). */
export function framesForSeconds(seconds: number, fps: number): number {
  return Math.round(seconds * fps);
}

/** Duration of `frames` at `fps` as the job object's `seconds` string (3 decimals, no trailing zeros). */
export function secondsLabel(frames: number, fps: number): string {
  return String(Math.round((frames / fps) * 1000) / 1000);
}

export function videoCaps(profile: ModelProfile): VideoCapabilities {
  if (!profile.video) throw new Error(`model ${profile.id} is not a video model`);
  return profile.video;
}

export function isVideoProfile(profile: ModelProfile): boolean {
  return profile.kinds.includes('video');
}

/** Snap a side to the model's grid (nearest multiple, at least one grid step). */
export function snapSide(v: number, grid: number): number {
  return Math.max(grid, Math.round(v / grid) * grid);
}

/**
 * Output size from a conditioning image when the client sent none. Wan (vLLM-Omni I2V): keep the image's
 * aspect ratio within the model's maximum area (720×1280), sides rounded down to the grid. H3 (FL2VA
 * "follows the first image"): the short edge becomes 768 with the image's aspect ratio.
 */
export function sizeFromImage(profile: ModelProfile, image: { width: number; height: number }): { width: number; height: number } {
  const caps = videoCaps(profile);
  const g = profile.grid;
  const aspect = image.width / image.height;
  let w: number;
  let h: number;
  if (caps.imageSize.mode === 'max-area') {
    h = Math.sqrt(caps.imageSize.area / aspect);
    w = h * aspect;
  } else {
    const s = caps.imageSize.shortEdge;
    [w, h] = aspect >= 1 ? [s * aspect, s] : [s, s / aspect];
  }
  // Extreme aspect ratios: shrink both sides until the model's limits hold, then floor to the grid.
  const scale = Math.min(1, profile.maxSide / w, profile.maxSide / h, Math.sqrt(profile.maxPixels / (w * h)));
  return {
    width: Math.max(profile.minSide, Math.floor((w * scale) / g) * g),
    height: Math.max(profile.minSide, Math.floor((h * scale) / g) * g),
  };
}

/** The video spec of a request that names nothing: the model's first task, default length and rate. */
export function defaultVideoSpec(profile: ModelProfile): VideoSpec {
  const caps = videoCaps(profile);
  return {
    task: caps.tasks[0]!,
    frames: caps.defaultFrames,
    fps: caps.defaultFps,
    references: [],
    requested: {},
  };
}
