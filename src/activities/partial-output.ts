/**
 * The image an interrupted or skipped item answers with, as A1111 answers with its partly denoised latent:
 * the last sampler preview ComfyUI sent for the prompt (a latent-space approximation at 1/8 of the size,
 * requested with `extra_data.preview_method` for this purpose), brought to the item's output size and
 * stored like a finished output (PNG with the item's infotext, or the requested format). No preview = no
 * partial image: a prompt interrupted before its first sampling step has nothing to show.
 */
import type { BlobStore } from '../blobs/store.ts';
import { stripPngText } from '../comfyui/png-metadata.ts';
import { encodeOutput } from '../images/encode.ts';
import { infotextFor } from '../infotext/format.ts';
import { isImageRender, type BlobRef, type ImageRender, type RenderRequest } from '../contracts/render.ts';

/** Kinds whose graphs run a sampler with previews and end in one image per item. */
export function hasPartialImage(request: RenderRequest | undefined): request is ImageRender {
  return request !== undefined && isImageRender(request);
}

/** Preview frames are tiny (latent size): anything larger than this is not one and is not decoded. */
const MAX_PREVIEW_PIXELS = 4096 * 4096;

let sharpModule: Promise<typeof import('sharp').default> | undefined;
const loadSharp = (): Promise<typeof import('sharp').default> => (sharpModule ??= import('sharp').then((m) => m.default));

/** The size of the item's final image: the hires pass's when there is one. */
export function outputSize(request: ImageRender): { width: number; height: number } {
  return request.hires ? { width: request.hires.width, height: request.hires.height } : { width: request.width, height: request.height };
}

/** Decodes the preview (JPEG or PNG) off the event loop (libvips threads), resizes it and stores it. */
export async function storePartialImage(blobs: BlobStore, preview: Buffer, request: ImageRender, itemIndex: number): Promise<BlobRef> {
  const sharp = await loadSharp();
  const { width, height } = outputSize(request);
  const resized = await sharp(preview, { limitInputPixels: MAX_PREVIEW_PIXELS, failOn: 'error' })
    .removeAlpha()
    .resize(width, height, { fit: 'fill', kernel: 'lanczos3' })
    .png()
    .toBuffer();
  const infotext = infotextFor(request, itemIndex);
  const png = stripPngText(resized, { parameters: infotext });
  if (request.output && request.output.format !== 'png') {
    const enc = await encodeOutput(png, request.output, infotext);
    return blobs.put(enc.data, { mime: enc.mime, width: enc.width, height: enc.height });
  }
  return blobs.put(png, { mime: 'image/png', width, height });
}
