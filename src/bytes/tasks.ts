/**
 * What a byte worker does: every parse of untrusted request bytes the service needs, by name. These run in
 * the worker thread (worker-main.ts); the service calls them through off-loop.ts. Each is bounded by what it
 * reads (pixel and byte limits, inflate output limits) and, around it, by the pool's heap cap and deadline.
 */
import { parse as secureJsonParse } from 'secure-json-parse';
import { scanJsonShape } from './json-scan.ts';
import { INVALID_JSON } from './wire.ts';
import { convertOpenAiMask, type ConvertedMask } from '../images/openai-mask.ts';
import { parseInfotext } from '../infotext/parse.ts';
import { RequestError } from '../errors/request-error.ts';
import { PngFormatError, readPngText } from '../comfyui/png-metadata.ts';
import { decodeImageInputStreaming, type DecodedImage, type ImageLimits } from '../images/decode.ts';
import { exifUserComment } from '../images/encode.ts';
import { decodeImageSetStreaming, decodeSourceStreaming, type DecodedImageSet, type ImageSetInput, type ImageSource } from '../images/image-set.ts';

export type { ImageSource } from '../images/image-set.ts';

/** What `POST /sdapi/v1/png-info` reads from an image: its text chunks and their infotext parse. */
export interface ImageText {
  mime: string;
  items: Record<string, string>;
  parameters: Record<string, string>;
  /** JPEG and WebP: the bytes again, for sharp to find their EXIF (libvips, in its own threads). */
  bytes?: Uint8Array;
}

export const TASKS = {
  /**
   * A large JSON body: its values and nesting counted before anything is built (json-scan.ts), then parsed as
   * Fastify's own JSON parser does (`__proto__` refused). The front gets the value, never the body's text.
   */
  parseJson: async (a: { bytes: Uint8Array }): Promise<unknown> => {
    const bytes = Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength);
    scanJsonShape(bytes);
    try {
      return secureJsonParse(bytes.toString('utf8'), { protoAction: 'error', constructorAction: 'ignore' });
    } catch (err) {
      throw Object.assign(new Error((err as Error).message), { name: INVALID_JSON });
    }
  },

  /** The images of one A1111 render request (init, mask resized to the init image, references). */
  imageSet: (a: { input: ImageSetInput; limits: ImageLimits }): Promise<DecodedImageSet> => decodeImageSetStreaming(a.input, a.limits),

  /** Independent images (extras, video references), in order. */
  images: async (a: { sources: ImageSource[]; limits: ImageLimits }): Promise<DecodedImage[]> => {
    const out: DecodedImage[] = [];
    for (const s of a.sources) {
      out.push(await decodeSourceStreaming(s, a.limits));
    }
    return out;
  },

  /** An image's text: a PNG's text chunks (inflated with an output limit) and their infotext, parsed linearly. */
  imageText: async (a: { image: string; limits: ImageLimits }): Promise<ImageText> => {
    const decoded = await decodeImageInputStreaming(a.image, 'image', a.limits);
    if (decoded.ref.mime !== 'image/png') return { mime: decoded.ref.mime, items: {}, parameters: {}, bytes: decoded.bytes };
    let items: Record<string, string>;
    try {
      items = readPngText(decoded.bytes);
    } catch (err) {
      if (err instanceof PngFormatError) throw new RequestError(400, 'image', `image: ${err.message}`);
      throw err;
    }
    return { mime: decoded.ref.mime, items, parameters: items.parameters ? parseInfotext(items.parameters) : {} };
  },

  /** An OpenAI edit mask (transparent = edit) as this service's greyscale white = repaint PNG. */
  openAiMask: async (a: { bytes: Uint8Array }): Promise<ConvertedMask> =>
    convertOpenAiMask(Buffer.from(a.bytes.buffer, a.bytes.byteOffset, a.bytes.byteLength)),

  /** The infotext of raw EXIF bytes (a JPEG's or WebP's UserComment) and its parse. */
  exifText: async (a: { exif: Uint8Array }): Promise<{ info: string; parameters: Record<string, string> }> => {
    const info = exifUserComment(Buffer.from(a.exif.buffer, a.exif.byteOffset, a.exif.byteLength)) ?? '';
    return { info, parameters: info ? parseInfotext(info) : {} };
  },
} as const;

export type TaskName = keyof typeof TASKS;
export type TaskInput<N extends TaskName> = Parameters<(typeof TASKS)[N]>[0];
export type TaskOutput<N extends TaskName> = Awaited<ReturnType<(typeof TASKS)[N]>>;
