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
import path from 'node:path';
import { getSaveImagePath, SavePathError } from './files.ts';
import { need, NodeException, registerNodes, str, type NodeRunCtx } from './nodes.ts';
import { pyJsonDumps } from './pyjson.ts';

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
    '-c:v',
    'libx264',
    '-profile:v',
    'high',
    '-preset',
    'veryfast',
    '-threads',
    '1',
    '-pix_fmt',
    'yuv420p',
    '-colorspace',
    'bt709',
    '-color_primaries',
    'bt709',
    '-color_trc',
    'iec61966-2-1',
    '-color_range',
    'tv',
    '-video_track_timescale',
    '12288',
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
  return [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostdin',
    '-y',
    '-f',
    'lavfi',
    '-i',
    src,
    '-c:a',
    'flac',
    '-fflags',
    '+bitexact',
    '-flags:a',
    '+bitexact',
    '-f',
    'flac',
    path,
  ];
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

function savePath(n: NodeRunCtx, prefix: string, width: number, height: number) {
  try {
    return getSaveImagePath(prefix, n.dirs.output, width, height);
  } catch (err) {
    if (err instanceof SavePathError) throw new NodeException('Exception', err.message);
    throw err;
  }
}

/** An encoder failure is the node's exception (as PyAV's would be in ComfyUI). */
async function encode(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (err instanceof FfmpegError) throw new NodeException('RuntimeError', err.message);
    throw err;
  }
}

registerNodes({
  // H3's audio VAE decodes the audio half of the AV latent: as long as the video at H3's fixed 24 fps.
  VAEDecodeAudio: (n) => {
    const l = n.value('samples');
    return { outputs: [{ kind: 'audio', sig: n.outSig(0), seconds: l?.kind === 'latent' ? l.count / 24 : 1 }] };
  },
  SaveVideo: async (n) => {
    const video = need(n, 'video', 'video');
    // Validation drops a missing or unknown DynamicCombo key (`format`, `format.codec`) instead of refusing
    // it; the real node then fails reading it.
    if (n.literal('format') === undefined) throw new NodeException('KeyError', "'format'");
    const format = str(n, 'format', 'auto');
    if (format !== 'auto' && format !== 'mp4') throw new NodeException('ValueError', `the fake ComfyUI writes only mp4, not ${format}`);
    const sp = savePath(n, str(n, 'filename_prefix', 'video/ComfyUI'), video.width, video.height);
    const file = `${sp.filename}_${String(sp.counter).padStart(5, '0')}_.mp4`;
    const spec = { path: path.join(sp.fullOutputFolder, file), ...video, contentKey: video.sig, promptTag: pyJsonDumps(n.prompt) };
    await encode(() => writeFakeMp4(spec));
    return { outputs: [video], ui: { images: [{ filename: file, subfolder: sp.subfolder, type: 'output' }], animated: [true] } };
  },
  SaveAudio: async (n) => {
    const audio = need(n, 'audio', 'audio');
    const sp = savePath(n, str(n, 'filename_prefix', 'audio/ComfyUI'), 0, 0);
    const file = `${sp.filename}_${String(sp.counter).padStart(5, '0')}_.flac`;
    await encode(() => writeFakeFlac(path.join(sp.fullOutputFolder, file), audio.seconds, audio.sig));
    return { outputs: [audio], ui: { audio: [{ filename: file, subfolder: sp.subfolder, type: 'output' }] } };
  },
});
