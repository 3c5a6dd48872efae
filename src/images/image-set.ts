/**
 * The input images of one A1111 render request (init image, inpaint mask, reference images), decoded and
 * checked together: the mask is resized to the init image's size, so it needs the init image first.
 * decodeImageSet runs on the calling thread (tests, tools); decodeImageSetStreaming is what a byte worker
 * runs for the service (src/bytes/), its PNG inflates streamed.
 */
import { decodeImageInput, decodeImageInputStreaming, type DecodedImage, type ImageLimits } from './decode.ts';
import { normalizeMask } from './mask.ts';

export interface ImageSetInput {
  init?: { value: string; field: string };
  mask?: { value: string; field: string; invert: boolean; round: boolean };
  refs: Array<{ value: string; field: string }>;
}

export interface DecodedImageSet {
  init?: DecodedImage;
  mask?: DecodedImage;
  refs: DecodedImage[];
}

export function decodeImageSet(input: ImageSetInput, limits: ImageLimits): DecodedImageSet {
  const init = input.init && decodeImageInput(input.init.value, input.init.field, limits);
  const mask = input.mask && maskFor(input.mask, decodeImageInput(input.mask.value, input.mask.field, limits), init, limits);
  const refs = input.refs.map((r) => decodeImageInput(r.value, r.field, limits));
  return { ...(init ? { init } : {}), ...(mask ? { mask } : {}), refs };
}

export async function decodeImageSetStreaming(input: ImageSetInput, limits: ImageLimits): Promise<DecodedImageSet> {
  const init = input.init && (await decodeImageInputStreaming(input.init.value, input.init.field, limits));
  const mask = input.mask && maskFor(input.mask, await decodeImageInputStreaming(input.mask.value, input.mask.field, limits), init, limits);
  const refs: DecodedImage[] = [];
  for (const r of input.refs) refs.push(await decodeImageInputStreaming(r.value, r.field, limits));
  return { ...(init ? { init } : {}), ...(mask ? { mask } : {}), refs };
}

function maskFor(m: NonNullable<ImageSetInput['mask']>, decoded: DecodedImage, init: DecodedImage | undefined, limits: ImageLimits): DecodedImage {
  const size = init?.ref.width && init.ref.height ? { size: { width: init.ref.width, height: init.ref.height } } : {};
  return normalizeMask(decoded, m.field, { invert: m.invert, round: m.round, ...size }, limits);
}
