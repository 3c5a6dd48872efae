/**
 * What each node "computes" in the fake: no tensors, just the facts clients can observe. Latents and images
 * carry their size and batch count (so saved files have the size the graph asks for) and a content
 * signature (so pixels depend on the upstream graph and seed, never on the save node's prefix). Nodes not
 * listed here produce opaque values of their declared output types.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { DataDirs } from './files.ts';
import { resolveAnnotated } from './files.ts';
import type { RawNodeInfo } from './node-schema.ts';
import { outputTypes } from './node-schema.ts';
import { readImageHeader } from './png.ts';
import { pyStr } from './py.ts';
import type { Graph } from './queue.ts';

export type FakeValue =
  | { kind: 'latent'; sig: string; width: number; height: number; count: number }
  | { kind: 'image'; sig: string; width: number; height: number; count: number; alpha?: boolean }
  | { kind: 'mask'; sig: string; width: number; height: number; count: number }
  | { kind: 'video'; sig: string; width: number; height: number; frames: number; fps: number; audio: boolean }
  | { kind: 'audio'; sig: string; seconds: number }
  | { kind: 'opaque'; sig: string; type: string; steps?: number; scale?: number; value?: unknown };

export interface NodeResult {
  outputs: FakeValue[];
  ui?: Record<string, unknown>;
}

/** A Python exception raised by a node; becomes `execution_error`. */
export class NodeException extends Error {
  /** Appended to the message after a newline in `exception_message` (ComfyUI's OOM tips). */
  readonly tips: string;
  /** Traceback frames below the executor's own (the node function and what it called). */
  readonly frames: string[];

  constructor(
    readonly pyType: string,
    message: string,
    opts: { tips?: string; frames?: string[] } = {},
  ) {
    super(message);
    this.tips = opts.tips ?? '';
    this.frames = opts.frames ?? [];
  }
}

export const OOM_TIPS =
  'This error means you ran out of memory on your GPU.\n\nTIPS: If the workflow worked before you might have accidentally set the batch_size to a large number.';

/** Raised like ComfyUI's OOM path: `exception_message` is the exception text, a newline, then the tips. */
export function oomException(detail = 'Allocation on device '): NodeException {
  return new NodeException('torch.OutOfMemoryError', detail, { tips: OOM_TIPS });
}

/** Total pixels a single node may produce before the fake "runs out of memory" (keeps the fake cheap). */
const MAX_PIXELS = 64 * 1024 * 1024;

export interface NodeRunCtx {
  id: string;
  classType: string;
  info: RawNodeInfo;
  promptId: string;
  prompt: Graph;
  extraData: Record<string, unknown>;
  dirs: DataDirs;
  /** Literal input (with `{__value__}` unwrapped, a linked Primitive* node's value), undefined when absent or linked. */
  literal(name: string): unknown;
  /** Linked input's value, undefined when absent or literal. */
  value(name: string): FakeValue | undefined;
  /** Whether the input is a link. */
  linked(name: string): boolean;
  /** Signature of this node's output slot `i`. */
  outSig(i: number): string;
  /**
   * Runs `steps` sampler steps: delay, interrupt check, throttled `progress_state` + `progress`, and a
   * preview frame of `latent` per step when the prompt asked for previews.
   */
  sample(steps: number, latent?: Extract<FakeValue, { kind: 'latent' }>): Promise<void>;
}

export type NodeImpl = (n: NodeRunCtx) => Promise<NodeResult> | NodeResult;

export function num(n: NodeRunCtx, name: string, dflt: number): number {
  const v = n.literal(name);
  const x = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : typeof v === 'boolean' ? Number(v) : NaN;
  return Number.isFinite(x) ? x : dflt;
}

export function int(n: NodeRunCtx, name: string, dflt: number): number {
  return Math.trunc(num(n, name, dflt));
}

export function str(n: NodeRunCtx, name: string, dflt: string): string {
  const v = n.literal(name);
  return v === undefined || v === null ? dflt : pyStr(v);
}

export function need<K extends FakeValue['kind']>(n: NodeRunCtx, name: string, kind: K): Extract<FakeValue, { kind: K }> {
  const v = n.value(name);
  if (!v || v.kind !== kind) {
    throw new NodeException('AttributeError', `'NoneType' object has no attribute 'shape' (input ${name} of ${n.classType})`);
  }
  return v as Extract<FakeValue, { kind: K }>;
}

function opaque(n: NodeRunCtx, i: number, type?: string): FakeValue {
  return { kind: 'opaque', sig: n.outSig(i), type: type ?? pyStr(outputTypes(n.info)[i] ?? '*') };
}

function latent(n: NodeRunCtx, i: number, width: number, height: number, count: number): FakeValue {
  if (width * height * count > MAX_PIXELS) throw oomException();
  return { kind: 'latent', sig: n.outSig(i), width, height, count };
}

export function image(n: NodeRunCtx, i: number, width: number, height: number, count: number): FakeValue {
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
  if (!header) {
    throw new NodeException('PIL.UnidentifiedImageError', `cannot identify image file '${full}'`, {
      frames: [
        '  File "/opt/ComfyUI/nodes.py", line 1765, in load_image\n',
        '  File "/opt/ComfyUI/node_helpers.py", line 62, in pillow\n',
        '  File "/opt/venv/lib/python3.12/site-packages/PIL/Image.py", line 3730, in open\n',
      ],
    });
  }
  return header;
}

/** Primitive* nodes pass their widget value on, so a linked `steps` or `switch` is read like a literal. */
const primitive: NodeImpl = (n) => ({ outputs: [{ kind: 'opaque', sig: n.outSig(0), type: pyStr(outputTypes(n.info)[0] ?? '*'), value: n.literal('value') }] });

/**
 * `check_lazy_status` of nodes with lazy inputs: the inputs still needed before the node can run. The
 * executor links them in and runs the node again, as ComfyUI does (so the node gets `executing` twice).
 */
const LAZY: Record<string, (n: NodeRunCtx) => string[]> = {
  ComfySwitchNode: (n) => {
    const wanted = n.literal('switch') ? 'on_true' : 'on_false';
    return n.linked(wanted) && n.value(wanted) === undefined ? [wanted] : [];
  },
};

export function lazyInputsNeeded(n: NodeRunCtx): string[] {
  return LAZY[n.classType]?.(n) ?? [];
}

const IMPLS: Record<string, NodeImpl> = {
  PrimitiveBoolean: primitive,
  PrimitiveInt: primitive,
  PrimitiveFloat: primitive,
  PrimitiveString: primitive,
  PrimitiveStringMultiline: primitive,
  ComfySwitchNode: (n) => {
    const v = n.value(n.literal('switch') ? 'on_true' : 'on_false');
    return { outputs: [v ?? opaque(n, 0)] };
  },
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
  MiniMaxH3ReferenceToVideo: (n) => ({
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
    await n.sample(int(n, 'steps', 20), l);
    return { outputs: [latent(n, 0, l.width, l.height, l.count)] };
  },
  KSamplerAdvanced: async (n) => {
    const l = need(n, 'latent_image', 'latent');
    const steps = int(n, 'steps', 20);
    const effective = Math.max(0, Math.min(steps, int(n, 'end_at_step', 10000)) - int(n, 'start_at_step', 0));
    if (effective > 0) await n.sample(effective, l);
    return { outputs: [latent(n, 0, l.width, l.height, l.count)] };
  },
  BasicScheduler: (n) => ({ outputs: [{ kind: 'opaque', sig: n.outSig(0), type: 'SIGMAS', steps: int(n, 'steps', 20) }] }),
  SamplerCustomAdvanced: async (n) => {
    const l = need(n, 'latent_image', 'latent');
    const sigmas = n.value('sigmas');
    await n.sample(sigmas?.kind === 'opaque' && sigmas.steps !== undefined ? sigmas.steps : 20, l);
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
  MaskToImage: (n) => {
    const m = need(n, 'mask', 'mask');
    return { outputs: [image(n, 0, m.width, m.height, m.count)] };
  },
  ImageBlur: (n) => {
    const img = need(n, 'image', 'image');
    return { outputs: [image(n, 0, img.width, img.height, img.count)] };
  },
  // The destination's size: the source is pasted into it (resize_source false crops what overhangs).
  ImageCompositeMasked: (n) => {
    const dst = need(n, 'destination', 'image');
    need(n, 'source', 'image');
    return { outputs: [image(n, 0, dst.width, dst.height, dst.count)] };
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
  ImageScaleBy: (n) => {
    const img = need(n, 'image', 'image');
    const by = num(n, 'scale_by', 1);
    return { outputs: [image(n, 0, Math.round(img.width * by), Math.round(img.height * by), img.count)] };
  },
  LatentUpscale: (n) => {
    const l = need(n, 'samples', 'latent');
    const w = int(n, 'width', 512);
    const h = int(n, 'height', 512);
    return { outputs: [latent(n, 0, w === 0 ? l.width : w, h === 0 ? l.height : h, l.count)] };
  },
  LatentUpscaleBy: (n) => {
    const l = need(n, 'samples', 'latent');
    const by = num(n, 'scale_by', 1.5);
    return { outputs: [latent(n, 0, Math.round(l.width * by), Math.round(l.height * by), l.count)] };
  },
  // Upscale models scale by the factor in their file name (`4x-UltraSharp.pth`), 4 when it has none.
  UpscaleModelLoader: (n) => {
    const m = /([1-8])x|x([1-8])/i.exec(str(n, 'model_name', ''));
    return { outputs: [{ kind: 'opaque', sig: n.outSig(0), type: 'UPSCALE_MODEL', scale: m ? Number(m[1] ?? m[2]) : 4 }] };
  },
  ImageUpscaleWithModel: (n) => {
    const img = need(n, 'image', 'image');
    const model = n.value('upscale_model');
    const by = model?.kind === 'opaque' && model.scale !== undefined ? model.scale : 4;
    return { outputs: [image(n, 0, img.width * by, img.height * by, img.count)] };
  },
  ImagePadForOutpaint: (n) => {
    const img = need(n, 'image', 'image');
    const w = img.width + int(n, 'left', 0) + int(n, 'right', 0);
    const h = img.height + int(n, 'top', 0) + int(n, 'bottom', 0);
    return { outputs: [image(n, 0, w, h, img.count), { kind: 'mask', sig: n.outSig(1), width: w, height: h, count: img.count }] };
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
  CreateVideo: (n) => {
    const images = need(n, 'images', 'image');
    const audio = n.value('audio');
    return {
      outputs: [
        {
          kind: 'video',
          sig: n.outSig(0),
          width: images.width,
          height: images.height,
          frames: images.count,
          fps: num(n, 'fps', 30),
          audio: audio !== undefined,
        },
      ],
    };
  },
};

/**
 * Adds or replaces node implementations (how output writers such as SaveImage or SaveVideo plug in, one
 * file per concern). Classes without one produce opaque values of their declared output types.
 */
export function registerNodes(impls: Record<string, NodeImpl>): void {
  Object.assign(IMPLS, impls);
}

export async function runFakeNode(n: NodeRunCtx): Promise<NodeResult> {
  const impl = IMPLS[n.classType];
  if (impl) return impl(n);
  // A class the fake has no entry for that maps an image to one image (a custom preprocessor node given in the
  // served /object_info, e.g. comfyui_controlnet_aux's): an image of the input's size, as Canny's is.
  const types = outputTypes(n.info);
  const input = n.value('image');
  if (types.length === 1 && types[0] === 'IMAGE' && input?.kind === 'image') return { outputs: [image(n, 0, input.width, input.height, input.count)] };
  return { outputs: types.map((_, i) => opaque(n, i)) };
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
