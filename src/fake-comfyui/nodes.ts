/**
 * What each node "computes" in the fake: no tensors, just the facts clients can observe. Latents and images
 * carry their size and batch count (so saved files have the size the graph asks for) and a content
 * signature (so pixels depend on the upstream graph and seed, never on the save node's prefix). Nodes not
 * listed here produce opaque values of their declared output types.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { NodeInfo } from '../comfyui/object-info.ts';
import type { DataDirs } from './files.ts';
import { getSaveImagePath, resolveAnnotated, SavePathError } from './files.ts';
import { readImageHeader, renderPng } from './png.ts';
import { FfmpegError, writeFakeFlac, writeFakeMp4 } from './video.ts';
import { pyJsonDumps } from './pyjson.ts';
import type { Graph } from './queue.ts';

export type FakeValue =
  | { kind: 'latent'; sig: string; width: number; height: number; count: number }
  | { kind: 'image'; sig: string; width: number; height: number; count: number }
  | { kind: 'mask'; sig: string; width: number; height: number; count: number }
  | { kind: 'video'; sig: string; width: number; height: number; frames: number; fps: number; audio: boolean }
  | { kind: 'audio'; sig: string; seconds: number }
  | { kind: 'opaque'; sig: string; type: string; steps?: number };

export interface NodeResult {
  outputs: FakeValue[];
  ui?: Record<string, unknown>;
}

/** A Python exception raised by a node; becomes `execution_error`. */
export class NodeException extends Error {
  constructor(
    readonly pyType: string,
    message: string,
  ) {
    super(message);
  }
}

export const OOM_TIPS =
  'This error means you ran out of memory on your GPU.\n\nTIPS: If the workflow worked before you might have accidentally set the batch_size to a large number.';

/** Raised like ComfyUI's OOM path: the exception text, a newline, then the tips. */
export function oomException(detail = 'Allocation on device '): NodeException {
  return new NodeException('torch.OutOfMemoryError', `${detail}\n${OOM_TIPS}`);
}

/** Total pixels a single node may produce before the fake "runs out of memory" (keeps the fake cheap). */
const MAX_PIXELS = 64 * 1024 * 1024;

export interface NodeRunCtx {
  id: string;
  classType: string;
  info: NodeInfo;
  promptId: string;
  prompt: Graph;
  extraData: Record<string, unknown>;
  dirs: DataDirs;
  /** Literal input (with `{__value__}` unwrapped), undefined when absent or linked. */
  literal(name: string): unknown;
  /** Linked input's value, undefined when absent or literal. */
  value(name: string): FakeValue | undefined;
  /** Signature of this node's output slot `i`. */
  outSig(i: number): string;
  /** Runs `steps` sampler steps: delay, interrupt check, `progress_state` + `progress` per step. */
  sample(steps: number): Promise<void>;
}

type Impl = (n: NodeRunCtx) => Promise<NodeResult> | NodeResult;

function num(n: NodeRunCtx, name: string, dflt: number): number {
  const v = n.literal(name);
  const x = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : typeof v === 'boolean' ? Number(v) : NaN;
  return Number.isFinite(x) ? x : dflt;
}

function int(n: NodeRunCtx, name: string, dflt: number): number {
  return Math.trunc(num(n, name, dflt));
}

function str(n: NodeRunCtx, name: string, dflt: string): string {
  const v = n.literal(name);
  return v === undefined || v === null ? dflt : String(v);
}

function need<K extends FakeValue['kind']>(n: NodeRunCtx, name: string, kind: K): Extract<FakeValue, { kind: K }> {
  const v = n.value(name);
  if (!v || v.kind !== kind) {
    throw new NodeException('AttributeError', `'NoneType' object has no attribute 'shape' (input ${name} of ${n.classType})`);
  }
  return v as Extract<FakeValue, { kind: K }>;
}

function opaque(n: NodeRunCtx, i: number, type?: string): FakeValue {
  return { kind: 'opaque', sig: n.outSig(i), type: type ?? String(n.info.output[i] ?? '*') };
}

function latent(n: NodeRunCtx, i: number, width: number, height: number, count: number): FakeValue {
  if (width * height * count > MAX_PIXELS) throw oomException();
  return { kind: 'latent', sig: n.outSig(i), width, height, count };
}

function image(n: NodeRunCtx, i: number, width: number, height: number, count: number): FakeValue {
  if (width * height * count > MAX_PIXELS) throw oomException();
  return { kind: 'image', sig: n.outSig(i), width, height, count };
}

/** MiniMax H3 snaps frame counts up to the 17k+5 grid. */
function h3Length(length: number): number {
  const l = Math.max(5, length);
  return l + ((((5 - (l % 17)) % 17) + 17) % 17);
}

async function loadImageFile(n: NodeRunCtx): Promise<{ width: number; height: number; hasAlpha: boolean }> {
  const ref = str(n, 'image', '');
  const full = resolveAnnotated(n.dirs, ref) ?? path.join(n.dirs.input, ref);
  let buf: Buffer;
  try {
    buf = await readFile(full);
  } catch {
    throw new NodeException('FileNotFoundError', `[Errno 2] No such file or directory: '${full}'`);
  }
  const header = readImageHeader(buf);
  if (!header) throw new NodeException('PIL.UnidentifiedImageError', `cannot identify image file '${full}'`);
  return header;
}

/** Python `json.dumps` text as SaveImage embeds it. */
function pngText(n: NodeRunCtx): Record<string, string> {
  const text: Record<string, string> = { prompt: pyJsonDumps(n.prompt) };
  const pnginfo = n.extraData.extra_pnginfo;
  if (pnginfo && typeof pnginfo === 'object' && !Array.isArray(pnginfo)) {
    for (const [k, v] of Object.entries(pnginfo)) text[k] = pyJsonDumps(v);
  }
  return text;
}

async function saveImages(
  n: NodeRunCtx,
  images: Extract<FakeValue, { kind: 'image' }>,
  dir: string,
  prefix: string,
  type: 'output' | 'temp',
  deflateLevel: number,
): Promise<Array<{ filename: string; subfolder: string; type: string }>> {
  let sp;
  try {
    sp = getSaveImagePath(prefix, dir, images.width, images.height);
  } catch (err) {
    if (err instanceof SavePathError) throw new NodeException('Exception', err.message);
    throw err;
  }
  const results: Array<{ filename: string; subfolder: string; type: string }> = [];
  const text = pngText(n);
  let counter = sp.counter;
  for (let b = 0; b < images.count; b++) {
    const file = `${sp.filename.replaceAll('%batch_num%', String(b))}_${String(counter).padStart(5, '0')}_.png`;
    const png = renderPng({ width: images.width, height: images.height, contentKey: `${images.sig}#${b}`, text, deflateLevel });
    await writeFile(path.join(sp.fullOutputFolder, file), png);
    results.push({ filename: file, subfolder: sp.subfolder, type });
    counter++;
  }
  return results;
}

const PREVIEW_CHARS = 'abcdefghijklmnopqrstupvxyz';

const IMPLS: Record<string, Impl> = {
  EmptyLatentImage: (n) => ({ outputs: [latent(n, 0, int(n, 'width', 512), int(n, 'height', 512), int(n, 'batch_size', 1))] }),
  EmptySD3LatentImage: (n) => ({ outputs: [latent(n, 0, int(n, 'width', 1024), int(n, 'height', 1024), int(n, 'batch_size', 1))] }),
  EmptyHunyuanLatentVideo: (n) => ({
    outputs: [latent(n, 0, int(n, 'width', 848), int(n, 'height', 480), int(n, 'length', 25) * int(n, 'batch_size', 1))],
  }),
  Wan22ImageToVideoLatent: (n) => ({
    outputs: [latent(n, 0, int(n, 'width', 1280), int(n, 'height', 704), int(n, 'length', 49) * int(n, 'batch_size', 1))],
  }),
  WanImageToVideo: (n) => ({
    outputs: [opaque(n, 0), opaque(n, 1), latent(n, 2, int(n, 'width', 832), int(n, 'height', 480), int(n, 'length', 81) * int(n, 'batch_size', 1))],
  }),
  EmptyMiniMaxH3LatentAV: (n) => ({ outputs: [latent(n, 0, int(n, 'width', 1344), int(n, 'height', 768), h3Length(int(n, 'length', 124)))] }),
  MiniMaxH3ImageToVideo: (n) => ({
    outputs: [opaque(n, 0), latent(n, 1, int(n, 'width', 1344), int(n, 'height', 768), h3Length(int(n, 'length', 124)))],
  }),
  VAEEncode: (n) => {
    const px = need(n, 'pixels', 'image');
    return { outputs: [latent(n, 0, px.width, px.height, px.count)] };
  },
  InpaintModelConditioning: (n) => {
    const px = need(n, 'pixels', 'image');
    return { outputs: [opaque(n, 0), opaque(n, 1), latent(n, 2, px.width, px.height, px.count)] };
  },
  SetLatentNoiseMask: (n) => {
    const l = need(n, 'samples', 'latent');
    return { outputs: [latent(n, 0, l.width, l.height, l.count)] };
  },
  KSampler: async (n) => {
    const l = need(n, 'latent_image', 'latent');
    await n.sample(int(n, 'steps', 20));
    return { outputs: [latent(n, 0, l.width, l.height, l.count)] };
  },
  KSamplerAdvanced: async (n) => {
    const l = need(n, 'latent_image', 'latent');
    const steps = int(n, 'steps', 20);
    const effective = Math.max(0, Math.min(steps, int(n, 'end_at_step', 10000)) - int(n, 'start_at_step', 0));
    if (effective > 0) await n.sample(effective);
    return { outputs: [latent(n, 0, l.width, l.height, l.count)] };
  },
  BasicScheduler: (n) => ({ outputs: [{ kind: 'opaque', sig: n.outSig(0), type: 'SIGMAS', steps: int(n, 'steps', 20) }] }),
  SamplerCustomAdvanced: async (n) => {
    const l = need(n, 'latent_image', 'latent');
    const sigmas = n.value('sigmas');
    await n.sample(sigmas?.kind === 'opaque' && sigmas.steps !== undefined ? sigmas.steps : 20);
    return { outputs: [latent(n, 0, l.width, l.height, l.count), latent(n, 1, l.width, l.height, l.count)] };
  },
  VAEDecode: (n) => {
    const l = need(n, 'samples', 'latent');
    return { outputs: [image(n, 0, l.width, l.height, l.count)] };
  },
  LoadImage: async (n) => {
    const h = await loadImageFile(n);
    const mask: FakeValue = h.hasAlpha
      ? { kind: 'mask', sig: n.outSig(1), width: h.width, height: h.height, count: 1 }
      : { kind: 'mask', sig: n.outSig(1), width: 64, height: 64, count: 1 };
    return { outputs: [image(n, 0, h.width, h.height, 1), mask] };
  },
  LoadImageMask: async (n) => {
    const h = await loadImageFile(n);
    const channel = str(n, 'channel', 'alpha');
    const small = channel === 'alpha' && !h.hasAlpha;
    return { outputs: [{ kind: 'mask', sig: n.outSig(0), width: small ? 64 : h.width, height: small ? 64 : h.height, count: 1 }] };
  },
  ImageToMask: (n) => {
    const img = need(n, 'image', 'image');
    return { outputs: [{ kind: 'mask', sig: n.outSig(0), width: img.width, height: img.height, count: img.count }] };
  },
  ImageScale: (n) => {
    const img = need(n, 'image', 'image');
    let w = int(n, 'width', 512);
    let h = int(n, 'height', 512);
    if (w === 0 && h === 0) [w, h] = [img.width, img.height];
    else if (w === 0) w = Math.max(1, Math.round((img.width * h) / img.height));
    else if (h === 0) h = Math.max(1, Math.round((img.height * w) / img.width));
    return { outputs: [image(n, 0, w, h, img.count)] };
  },
  // Simplification: the real node picks the closest Kontext resolution; the fake keeps the input size.
  FluxKontextImageScale: (n) => {
    const img = need(n, 'image', 'image');
    return { outputs: [image(n, 0, img.width, img.height, img.count)] };
  },
  ImageStitch: (n) => {
    const a = need(n, 'image1', 'image');
    const b = n.value('image2');
    if (!b || b.kind !== 'image') return { outputs: [image(n, 0, a.width, a.height, a.count)] };
    const dir = str(n, 'direction', 'right');
    const match = n.literal('match_image_size') !== false;
    const spacing = int(n, 'spacing_width', 0);
    const horizontal = dir === 'right' || dir === 'left';
    let [bw, bh] = [b.width, b.height];
    if (match) {
      if (horizontal) [bw, bh] = [Math.round((b.width * a.height) / b.height), a.height];
      else [bw, bh] = [a.width, Math.round((b.height * a.width) / b.width)];
    }
    const w = horizontal ? a.width + bw + spacing : Math.max(a.width, bw);
    const h = horizontal ? Math.max(a.height, bh) : a.height + bh + spacing;
    return { outputs: [image(n, 0, w, h, Math.max(a.count, b.count))] };
  },
  SaveImage: async (n) => {
    const images = need(n, 'images', 'image');
    const results = await saveImages(n, images, n.dirs.output, str(n, 'filename_prefix', 'ComfyUI'), 'output', 4);
    return { outputs: [images], ui: { images: results } };
  },
  PreviewImage: async (n) => {
    const images = need(n, 'images', 'image');
    let suffix = '';
    for (let i = 0; i < 5; i++) suffix += PREVIEW_CHARS[Math.floor(Math.random() * PREVIEW_CHARS.length)];
    const results = await saveImages(n, images, n.dirs.temp, `ComfyUI_temp_${suffix}`, 'temp', 1);
    return { outputs: [images], ui: { images: results } };
  },
  CreateVideo: (n) => {
    const images = need(n, 'images', 'image');
    const audio = n.value('audio');
    return {
      outputs: [
        { kind: 'video', sig: n.outSig(0), width: images.width, height: images.height, frames: images.count, fps: num(n, 'fps', 30), audio: audio !== undefined },
      ],
    };
  },
  // H3's audio VAE decodes the audio half of the AV latent: as long as the video at H3's fixed 24 fps.
  VAEDecodeAudio: (n) => {
    const l = n.value('samples');
    return { outputs: [{ kind: 'audio', sig: n.outSig(0), seconds: l?.kind === 'latent' ? l.count / 24 : 1 }] };
  },
  SaveVideo: async (n) => {
    const video = need(n, 'video', 'video');
    // On 0.33.0 `format` is a DynamicCombo whose codec is sent as `format.codec`; older servers had `codec`.
    // Validation lets a missing DynamicCombo through; the real node then fails reading it.
    if (n.literal('format.codec') === undefined && n.literal('codec') === undefined) throw new NodeException('KeyError', "'codec'");
    const format = str(n, 'format', 'auto');
    if (format !== 'auto' && format !== 'mp4') throw new NodeException('ValueError', `fake ComfyUI writes only mp4, not ${format}`);
    const sp = savePath(n, str(n, 'filename_prefix', 'video/ComfyUI'), video.width, video.height);
    const file = `${sp.filename}_${String(sp.counter).padStart(5, '0')}_.mp4`;
    await encode(() =>
      writeFakeMp4({ path: path.join(sp.fullOutputFolder, file), ...video, contentKey: video.sig, promptTag: pyJsonDumps(n.prompt) }),
    );
    return { outputs: [video], ui: { images: [{ filename: file, subfolder: sp.subfolder, type: 'output' }], animated: [true] } };
  },
  SaveAudio: async (n) => {
    const audio = need(n, 'audio', 'audio');
    const sp = savePath(n, str(n, 'filename_prefix', 'audio/ComfyUI'), 0, 0);
    const file = `${sp.filename}_${String(sp.counter).padStart(5, '0')}_.flac`;
    await encode(() => writeFakeFlac(path.join(sp.fullOutputFolder, file), audio.seconds, audio.sig));
    return { outputs: [audio], ui: { audio: [{ filename: file, subfolder: sp.subfolder, type: 'output' }] } };
  },
};

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

export async function runFakeNode(n: NodeRunCtx): Promise<NodeResult> {
  const impl = IMPLS[n.classType];
  if (impl) return impl(n);
  return { outputs: n.info.output.map((_, i) => opaque(n, i)) };
}

/** Short `str()`-like rendering of a value for `execution_error.current_inputs`. */
export function describeValue(v: FakeValue): string {
  switch (v.kind) {
    case 'latent':
    case 'image':
    case 'mask':
      return `<${v.kind} ${v.width}x${v.height} x${v.count}>`;
    case 'video':
      return `<video ${v.width}x${v.height} ${v.frames} frames @ ${v.fps} fps>`;
    case 'audio':
      return `<audio ${v.seconds.toFixed(3)} s>`;
    default:
      return `<${v.type} object>`;
  }
}
