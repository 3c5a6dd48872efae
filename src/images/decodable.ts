/**
 * A JPEG or WebP whose header reads may still not decode (a truncated file, a WebP container with no image
 * in it): stored and uploaded, it would fail inside ComfyUI's LoadImage after the render started, a 500 for
 * the client's bad bytes (the fuzzer found exactly that). So each is decoded once here, shrunk on load to a
 * few pixels, by sharp: libvips works in its own threads, off the event loop, with a pixel limit of its own.
 * PNGs are checked in full elsewhere (png-bounds.ts) and skip this.
 */
import { RequestError } from '../errors/request-error.ts';
import type { DecodedImage } from './decode.ts';

let sharpModule: Promise<typeof import('sharp').default> | undefined;
const loadSharp = (): Promise<typeof import('sharp').default> => (sharpModule ??= import('sharp').then((m) => m.default));

export async function assertDecodable(image: DecodedImage, field: string, maxPixels: number): Promise<void> {
  const { mime } = image.ref;
  if (mime === 'image/png') return;
  const sharp = await loadSharp();
  try {
    await sharp(image.bytes, { failOn: 'truncated', limitInputPixels: maxPixels, sequentialRead: true })
      .resize(8, 8, { fit: 'fill', fastShrinkOnLoad: true })
      .raw()
      .toBuffer();
  } catch (err) {
    const why = ((err as Error).message.split('\n')[0] ?? '').slice(0, 200);
    throw new RequestError(400, field, `${field}: corrupt ${mime} image (it does not decode: ${why})`);
  }
}
