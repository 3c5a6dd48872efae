/**
 * The parsing entry points the service uses for untrusted bytes, each run in a byte worker (pool.ts):
 *   decodeImageSetOffLoop  A1111 render images (init, mask, references, control images)
 *   decodeImagesOffLoop    independent images: extras, video references (base64 or uploaded bytes)
 *   readImageTextOffLoop   png-info: text chunks / EXIF comment and the infotext parse
 *   parseJsonOffLoop       a large JSON body: its value count and depth, then the parse
 * A worker that runs out of time or memory answers as a RequestError naming the first image field (the
 * input is what made it so), never as a 500.
 */
import { RequestError } from '../errors/request-error.ts';
import { assertDecodable } from '../images/decodable.ts';
import type { DecodedImage, ImageLimits } from '../images/decode.ts';
import type { DecodedImageSet, ImageSetInput } from '../images/image-set.ts';
import { BytePoolError, runByteTask } from './pool.ts';
import { declaredPixels } from './cost.ts';
import type { ImageSource, ImageText } from './tasks.ts';
import type { ConvertedMask } from '../images/openai-mask.ts';
import { asBuffer, INVALID_JSON, transferable } from './wire.ts';

function revive(d: DecodedImage): DecodedImage {
  return { ref: d.ref, bytes: asBuffer(d.bytes) };
}

/** Seconds a client refused by a full byte queue is told to wait: about one large image's check. */
export const BYTE_BUSY_RETRY_AFTER_S = 5;

async function bounded<T>(field: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof BytePoolError) throw poolRefusal(field, err);
    throw err;
  }
}

/** The input made it so (too slow, too large): 413; the service is busy or stopping: 503 with Retry-After. */
function poolRefusal(field: string, err: BytePoolError): RequestError {
  if (err.reason === 'timeout' || err.reason === 'memory') return new RequestError(413, field, `${field}: refused: ${err.message}`);
  const message = err.reason === 'crashed' ? 'the image could not be checked, try again' : err.message;
  return new RequestError(503, field, `${field}: ${message}`, { retryAfterSeconds: BYTE_BUSY_RETRY_AFTER_S });
}

/** Pixels the images of a task declare, each unreadable header charged as the largest image allowed. */
function pixelsOf(values: Array<string | Uint8Array>, limits: ImageLimits): number {
  return values.reduce((sum, v) => sum + declaredPixels(v, limits.maxImagePixels), 0);
}

function sourceValue(source: ImageSource): string | Uint8Array {
  return 'value' in source ? source.value : source.bytes;
}

function imageSetValues(input: ImageSetInput): Array<string | Uint8Array> {
  return [...(input.init ? [input.init] : []), ...(input.mask ? [input.mask] : []), ...input.refs, ...(input.controls ?? [])].map(sourceValue);
}

export async function decodeImageSetOffLoop(input: ImageSetInput, limits: ImageLimits): Promise<DecodedImageSet> {
  const first = input.init?.field ?? input.mask?.field ?? input.refs[0]?.field ?? input.controls?.[0]?.field;
  if (!first) return { refs: [] };
  const set = await bounded(first, () => runByteTask('imageSet', { input, limits }, { pixels: pixelsOf(imageSetValues(input), limits) }));
  const out: DecodedImageSet = {
    ...(set.init ? { init: revive(set.init) } : {}),
    ...(set.mask ? { mask: revive(set.mask) } : {}),
    refs: set.refs.map(revive),
    ...(set.controls ? { controls: set.controls.map(revive) } : {}),
  };
  await Promise.all([
    ...(out.init && input.init ? [assertDecodable(out.init, input.init.field, limits.maxImagePixels)] : []),
    ...out.refs.map((r, i) => assertDecodable(r, input.refs[i]?.field ?? 'image', limits.maxImagePixels)),
    ...(out.controls ?? []).map((c, i) => assertDecodable(c, input.controls?.[i]?.field ?? 'image', limits.maxImagePixels)),
  ]);
  return out;
}

export async function decodeImagesOffLoop(sources: ImageSource[], limits: ImageLimits): Promise<DecodedImage[]> {
  if (sources.length === 0) return [];
  // Uploaded bytes are copied to the worker, not moved: the caller's Buffers may share their memory.
  const out = (
    await bounded(sources[0]!.field, () =>
      runByteTask(
        'images',
        { sources, limits },
        {
          pixels: pixelsOf(
            sources.map((s) => ('value' in s ? s.value : s.bytes)),
            limits,
          ),
        },
      ),
    )
  ).map(revive);
  await Promise.all(out.map((d, i) => assertDecodable(d, sources[i]!.field, limits.maxImagePixels)));
  return out;
}

export async function readImageTextOffLoop(image: string, limits: ImageLimits): Promise<ImageText> {
  const text = await bounded('image', () => runByteTask('imageText', { image, limits }, { pixels: pixelsOf([image], limits) }));
  return text.bytes ? { ...text, bytes: asBuffer(text.bytes) } : text;
}

export async function readExifTextOffLoop(exif: Buffer): Promise<{ info: string; parameters: Record<string, string> }> {
  return bounded('image', () => runByteTask('exifText', { exif }));
}

/** convertOpenAiMask in a byte worker: the mask's pixels are decoded there, never on the event loop. */
export async function convertOpenAiMaskOffLoop(bytes: Buffer): Promise<ConvertedMask> {
  const out = await bounded('mask', () => runByteTask('openAiMask', { bytes }, { pixels: declaredPixels(bytes, Number.MAX_SAFE_INTEGER) }));
  return { ...out, png: asBuffer(out.png) };
}

/** The body is not JSON (or carries `__proto__`): the caller answers as Fastify's JSON parser does. */
export class InvalidJsonBody extends Error {}

/**
 * A large JSON body, counted and parsed in a byte worker: the front holds neither its text nor, once moved,
 * its bytes (a 2 MB image is ~2.7 MB of each), and the parse does not hold its event loop. A body that alone
 * owns its memory (a large body read whole does) is moved to the worker, not copied: `bytes` is unusable
 * after; one that may share its memory (Node's small-buffer pool, a socket's chunk) is copied.
 */
export async function parseJsonOffLoop(bytes: Buffer): Promise<unknown> {
  const owns = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  try {
    return await bounded('body', () => runByteTask('parseJson', { bytes }, owns ? { transfer: transferable([bytes]) } : {}));
  } catch (err) {
    if (err instanceof Error && err.name === INVALID_JSON) throw new InvalidJsonBody(err.message);
    throw err;
  }
}
