/**
 * `POST /sdapi/v1/png-info`: the generation parameters an image carries (the PNG `parameters` text chunk,
 * or the EXIF UserComment of a JPEG / WebP), and A1111's parse of that infotext. The image is decoded, its
 * text inflated (with an output limit) and parsed in a byte worker; a JPEG's or WebP's EXIF is found by
 * sharp, in libvips's threads.
 */
import { readExifTextOffLoop, readImageTextOffLoop } from '../../bytes/off-loop.ts';
import type { ImageLimits } from '../../images/decode.ts';
import { readExifBytes } from '../../images/encode.ts';
import { RequestError, describeValue } from './errors.ts';

export { parseInfotext } from '../../infotext/parse.ts';

export interface PngInfo {
  info: string;
  items: Record<string, string>;
  parameters: Record<string, string>;
}

export async function readPngInfo(body: unknown, limits: ImageLimits): Promise<PngInfo> {
  const image = body && typeof body === 'object' ? (body as { image?: unknown }).image : undefined;
  if (typeof image !== 'string' || image.trim() === '') {
    throw new RequestError(422, 'image', `image: expected a base64 image or data URL, got ${describeValue(image)}`);
  }
  const text = await readImageTextOffLoop(image, limits);
  if (text.bytes) {
    const exif = await readExifBytes(text.bytes as Buffer, limits.maxImagePixels);
    if (!exif) return { info: '', items: {}, parameters: {} };
    const { info, parameters } = await readExifTextOffLoop(exif);
    return { info, items: {}, parameters };
  }
  const { parameters: info = '', ...rest } = text.items;
  return { info, items: rest, parameters: text.parameters };
}
