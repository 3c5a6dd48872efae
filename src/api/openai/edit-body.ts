/**
 * The body of `POST /v1/images/edits`: OpenAI's multipart form (files `image`, or `image[]` repeated, and an
 * optional `mask`; text fields), or JSON carrying the images as base64 / data URLs (`image` a string or a
 * list, `images` a list of strings or `{image_url}` objects, `mask` a string or `{image_url}`), which some
 * clients send. Every part is bounded while it streams (MAX_IMAGE_BYTES per file, a file count, field sizes
 * and counts), and a body the multipart parser cannot read is a 400 naming the body, never a 500.
 */
import type { FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import { RequestError } from '../../errors/request-error.ts';

export interface EditFile {
  /** Where it came from, for error messages: `image`, `image[1]`, `mask`. */
  field: string;
  bytes?: Buffer;
  /** JSON bodies: base64 or a data URL, decoded by the A1111 path. */
  text?: string;
}

export interface EditBody {
  fields: Record<string, unknown>;
  images: EditFile[];
  mask?: EditFile;
}

export interface EditBodyLimits {
  maxImageBytes: number;
  maxImages: number;
  /** Longest text field (the multipart plugin's fieldSize): a prompt is at most 16 Ki characters. */
  maxFieldBytes: number;
}

const IMAGE_FIELDS = new Set(['image', 'image[]', 'images', 'images[]']);

export async function readEditBody(req: FastifyRequest, limits: EditBodyLimits): Promise<EditBody> {
  if (!req.isMultipart()) return fromJson(req.body, limits);
  const fields: Record<string, unknown> = {};
  const images: EditFile[] = [];
  let mask: EditFile | undefined;
  try {
    for await (const part of req.parts()) {
      if (part.type !== 'file') {
        if (part.valueTruncated) {
          throw new RequestError(413, part.fieldname, `${part.fieldname}: field longer than ${limits.maxFieldBytes} bytes`, { limit: limits.maxFieldBytes });
        }
        // An image or mask sent as a text field: base64 or a data: URL, as in a JSON body.
        if (IMAGE_FIELDS.has(part.fieldname) || part.fieldname === 'mask') {
          if (typeof part.value !== 'string' || part.value === '') continue;
          if (part.fieldname === 'mask') {
            if (mask) throw new RequestError(400, 'mask', 'mask: only one mask per request');
            mask = { field: 'mask', text: part.value };
          } else {
            if (images.length >= limits.maxImages)
              throw new RequestError(400, 'image', `image: more than ${limits.maxImages} images sent`, { limit: limits.maxImages });
            images.push({ field: `image[${images.length}]`, text: part.value });
          }
          continue;
        }
        // Repeated text fields: the last wins, as form decoders do.
        fields[part.fieldname] = part.value;
        continue;
      }
      const isImage = IMAGE_FIELDS.has(part.fieldname);
      if (!isImage && part.fieldname !== 'mask') {
        part.file.resume();
        throw new RequestError(400, part.fieldname, `${part.fieldname}: unexpected file (images go in image or image[], the mask in mask)`);
      }
      if (part.fieldname === 'mask' && mask) throw new RequestError(400, 'mask', 'mask: only one mask per request');
      if (isImage && images.length >= limits.maxImages) {
        throw new RequestError(400, 'image', `image: more than ${limits.maxImages} images sent`, { limit: limits.maxImages });
      }
      const field = part.fieldname === 'mask' ? 'mask' : `image[${images.length}]`;
      const bytes = await readBounded(part.file, field, limits.maxImageBytes);
      if (part.fieldname === 'mask') mask = { field, bytes };
      else images.push({ field, bytes });
    }
  } catch (err) {
    if (err instanceof RequestError) throw err;
    throw multipartError(err);
  }
  return { fields, images, ...(mask ? { mask } : {}) };
}

async function readBounded(file: AsyncIterable<unknown> & { truncated?: boolean }, field: string, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const tooLarge = (): RequestError => new RequestError(413, field, `${field}: file exceeds the limit of ${max} bytes (MAX_IMAGE_BYTES)`, { limit: max });
  for await (const chunk of file) {
    size += (chunk as Buffer).length;
    if (size > max) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  if (file.truncated) throw tooLarge();
  if (size === 0) throw new RequestError(400, field, `${field}: empty file`);
  return Buffer.concat(chunks);
}

/** @fastify/multipart's limit errors carry a 413; busboy's parse errors carry nothing: the body is malformed. */
function multipartError(err: unknown): RequestError {
  const e = err as { statusCode?: number; code?: string; message?: string };
  const message = e.message ?? String(err);
  if (e.statusCode === 413) return new RequestError(413, 'body', `body: ${message}`);
  if (e.code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') return new RequestError(400, 'content-type', `content-type: ${message}`);
  return new RequestError(400, 'body', `body: malformed multipart/form-data (${message})`);
}

function fromJson(body: unknown, limits: EditBodyLimits): EditBody {
  if (body === undefined || body === null) throw new RequestError(400, 'image', 'image: required (send multipart/form-data with an image file)');
  if (typeof body !== 'object' || Array.isArray(body)) throw new RequestError(400, 'body', 'body: must be a multipart form or a JSON object');
  const { image, images, mask, ...fields } = body as Record<string, unknown>;
  const list: EditFile[] = [];
  const add = (v: unknown, where: string): void => {
    const text = typeof v === 'string' ? v : v && typeof v === 'object' ? (v as { image_url?: unknown }).image_url : undefined;
    if (typeof text !== 'string') throw new RequestError(400, where, `${where}: expected base64, a data: URL or {image_url}`);
    if (list.length >= limits.maxImages) throw new RequestError(400, 'image', `image: more than ${limits.maxImages} images sent`, { limit: limits.maxImages });
    list.push({ field: `image[${list.length}]`, text });
  };
  for (const [name, value] of [
    ['image', image],
    ['images', images],
  ] as const) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) value.forEach((v, i) => add(v, `${name}.${i}`));
    else add(value, name);
  }
  let m: EditFile | undefined;
  if (mask !== undefined && mask !== null) {
    const text = typeof mask === 'string' ? mask : typeof mask === 'object' ? (mask as { image_url?: unknown }).image_url : undefined;
    if (typeof text !== 'string') throw new RequestError(400, 'mask', 'mask: expected base64, a data: URL or {image_url}');
    m = { field: 'mask', text };
  }
  return { fields, images: list, ...(m ? { mask: m } : {}) };
}
