/**
 * The input images of one render request (init image, inpaint mask, reference images, control images), decoded and checked
 * together: the mask is resized to the init image's size, so it needs the init image first. Each image is
 * base64 / data URL text or the bytes of an uploaded file, and is decoded exactly once, here.
 * decodeImageSet runs on the calling thread (tests, tools); decodeImageSetStreaming is what a byte worker
 * runs for the service (src/bytes/), its PNG inflates streamed.
 */
import { checkImageBytes, checkImageBytesStreaming, decodeImageInput, decodeImageInputStreaming, type DecodedImage, type ImageLimits } from './decode.ts';
import { normalizeMask } from './mask.ts';

/** One input image: base64 / data URL text, or the bytes of an uploaded file; `field` is the client's name for it. */
export type ImageSource = { field: string; value: string } | { field: string; bytes: Uint8Array };

export interface ImageSetInput {
  init?: ImageSource;
  mask?: ImageSource & { invert: boolean; round: boolean };
  refs: ImageSource[];
  /** Control units' images (ControlNet hints, image prompts), in unit order. */
  controls?: ImageSource[];
}

export interface DecodedImageSet {
  init?: DecodedImage;
  mask?: DecodedImage;
  refs: DecodedImage[];
  controls?: DecodedImage[];
}

const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

export function decodeSource(s: ImageSource, limits: ImageLimits): DecodedImage {
  return 'value' in s ? decodeImageInput(s.value, s.field, limits) : checkImageBytes(asBuffer(s.bytes), s.field, limits);
}

export function decodeSourceStreaming(s: ImageSource, limits: ImageLimits): Promise<DecodedImage> {
  return 'value' in s ? decodeImageInputStreaming(s.value, s.field, limits) : checkImageBytesStreaming(asBuffer(s.bytes), s.field, limits);
}

export function decodeImageSet(input: ImageSetInput, limits: ImageLimits): DecodedImageSet {
  const init = input.init && decodeSource(input.init, limits);
  const mask = input.mask && maskFor(input.mask, decodeSource(input.mask, limits), init, limits);
  const refs = input.refs.map((r) => decodeSource(r, limits));
  const controls = input.controls?.map((c) => decodeSource(c, limits));
  return { ...(init ? { init } : {}), ...(mask ? { mask } : {}), refs, ...(controls ? { controls } : {}) };
}

export async function decodeImageSetStreaming(input: ImageSetInput, limits: ImageLimits): Promise<DecodedImageSet> {
  const init = input.init && (await decodeSourceStreaming(input.init, limits));
  const mask = input.mask && maskFor(input.mask, await decodeSourceStreaming(input.mask, limits), init, limits);
  const refs: DecodedImage[] = [];
  for (const r of input.refs) refs.push(await decodeSourceStreaming(r, limits));
  const controls: DecodedImage[] = [];
  for (const c of input.controls ?? []) controls.push(await decodeSourceStreaming(c, limits));
  return { ...(init ? { init } : {}), ...(mask ? { mask } : {}), refs, ...(input.controls ? { controls } : {}) };
}

function maskFor(m: NonNullable<ImageSetInput['mask']>, decoded: DecodedImage, init: DecodedImage | undefined, limits: ImageLimits): DecodedImage {
  const size = init?.ref.width && init.ref.height ? { size: { width: init.ref.width, height: init.ref.height } } : {};
  return normalizeMask(decoded, m.field, { invert: m.invert, round: m.round, ...size }, limits);
}
