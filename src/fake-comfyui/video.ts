/**
 * Real, playable media for the fake's SaveVideo and SaveAudio, written by Debian's `ffmpeg` (installed by
 * scripts/setup.sh; `FFMPEG_PATH` overrides the binary). The files match what ComfyUI 0.33.0 wrote in the
 * recorded executions (ref/real-comfyui README "Video executions", item 6): MP4 (`isom`), H.264 High
 * yuv420p at the requested size, frame count and rate, time base 1/12288, BT.709 / sRGB / tv range, the API
 * graph as a `prompt` container tag; with audio an AAC LC 32 kHz stereo track as long as the video.
 *
 * Pixels and tones derive from the upstream content signature (graph + seed, never the save prefix), and
 * every encoder runs bit-exact single-threaded: the same graph and seed give the same bytes.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';

export interface FakeVideoSpec {
  path: string;
  width: number;
  height: number;
  frames: number;
  fps: number;
  audio: boolean;
  /** Content signature: decides the picture's hue and the soundtrack's tones. */
  contentKey: string;
  /** Container `prompt` tag (the API graph as ComfyUI's json.dumps text). */
  promptTag?: string;
}

/** Largest frame count the fake encodes (keeps a mistaken request from hogging the test machine). */
const MAX_FAKE_FRAMES = 3600;

function ffmpegPath(): string {
  return process.env.FFMPEG_PATH || 'ffmpeg';
}

function tones(contentKey: string): { hue: number; left: number; right: number } {
  const h = createHash('sha256').update(contentKey).digest();
  return { hue: h.readUInt16BE(0) % 360, left: 220 + (h.readUInt16BE(2) % 660), right: 220 + (h.readUInt16BE(4) % 660) };
}

/** Seconds as ffmpeg reads them, fixed-point so the argument list (and thus the bytes) is stable. */
const sec = (s: number): string => s.toFixed(6);

export function mp4Args(spec: FakeVideoSpec): string[] {
  const frames = Math.min(MAX_FAKE_FRAMES, Math.max(1, Math.trunc(spec.frames)));
  const duration = frames / spec.fps;
  const t = tones(spec.contentKey);
  // The source stops half a frame early so exactly `frames` frames come out; audio lasts the full duration.
  const video = `testsrc2=size=${spec.width}x${spec.height}:rate=${spec.fps}:duration=${sec((frames - 0.5) / spec.fps)},hue=h=${t.hue},format=yuv420p`;
  const args = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', '-f', 'lavfi', '-i', video];
  if (spec.audio) {
    const tone = (f: number) => `0.2*sin(${f}*2*PI*t)`;
    args.push('-f', 'lavfi', '-i', `aevalsrc=${tone(t.left)}|${tone(t.right)}:s=32000:c=stereo:d=${sec(duration)}`);
  }
  args.push(
    '-c:v', 'libx264', '-profile:v', 'high', '-preset', 'veryfast', '-threads', '1', '-pix_fmt', 'yuv420p',
    '-colorspace', 'bt709', '-color_primaries', 'bt709', '-color_trc', 'iec61966-2-1', '-color_range', 'tv',
    '-video_track_timescale', '12288',
  );
  if (spec.audio) args.push('-c:a', 'aac', '-b:a', '128k', '-flags:a', '+bitexact');
  args.push('-fflags', '+bitexact', '-flags:v', '+bitexact', '-movflags', 'use_metadata_tags');
  if (spec.promptTag !== undefined) args.push('-metadata', `prompt=${spec.promptTag}`);
  args.push('-f', 'mp4', spec.path);
  return args;
}

/** Stereo 32 kHz FLAC of `seconds`, as SaveAudio writes (`audio/ComfyUI_00001_.flac`). */
export function flacArgs(path: string, seconds: number, contentKey: string): string[] {
  const t = tones(contentKey);
  const src = `aevalsrc=0.2*sin(${t.left}*2*PI*t)|0.2*sin(${t.right}*2*PI*t):s=32000:c=stereo:d=${sec(seconds)}`;
  return ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', '-f', 'lavfi', '-i', src, '-c:a', 'flac', '-fflags', '+bitexact', '-flags:a', '+bitexact', '-f', 'flac', path];
}

export class FfmpegError extends Error {
  override name = 'FfmpegError';
}

/** Runs ffmpeg; rejects with its stderr. Asynchronous: the fake keeps answering HTTP while it encodes. */
export function runFfmpeg(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 4000) stderr += d;
    });
    child.once('error', (err) => {
      const hint = (err as NodeJS.ErrnoException).code === 'ENOENT' ? ' (install it with scripts/setup.sh, or set FFMPEG_PATH)' : '';
      reject(new FfmpegError(`cannot run ${ffmpegPath()}: ${err.message}${hint}`));
    });
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new FfmpegError(`ffmpeg exited with ${code ?? signal}: ${stderr.trim()}`));
    });
  });
}

export function writeFakeMp4(spec: FakeVideoSpec): Promise<void> {
  return runFfmpeg(mp4Args(spec));
}

export function writeFakeFlac(path: string, seconds: number, contentKey: string): Promise<void> {
  return runFfmpeg(flacArgs(path, seconds, contentKey));
}
