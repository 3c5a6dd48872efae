/**
 * `POST /upload/image` and `/upload/mask`, as ComfyUI takes them (multipart: `image`, and `overwrite`,
 * `subfolder`, `type`; a mask also `original_ref` JSON `{filename, subfolder, type}`). The image is checked
 * like every input image (type, size and pixel limits, a full decode) and kept as a blob; the answer names it
 * `<sha256>.<ext>` (subfolder ''), the name a graph then uses. Each render attempt uploads the blobs its graph
 * names to whichever ComfyUI runs it (renders/prompt-plan.ts), again on a retry elsewhere.
 * A mask is ComfyUI's: the original image with the mask's alpha as its own, stored as a new PNG.
 */
import type { FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import { RequestError } from '../../errors/request-error.ts';
import { checkImageBytesStreaming, type DecodedImage } from '../../images/decode.ts';
import { assertDecodable } from '../../images/decodable.ts';
import { inputUploadFor } from '../../models/plan.ts';
import type { ApiContext } from '../context.ts';
import { UPLOAD_NAME } from '../../renders/prompt-request.ts';

export interface UploadForm {
  image: Buffer;
  fields: Record<string, string>;
}

export async function readUploadForm(req: FastifyRequest, maxBytes: number): Promise<UploadForm> {
  if (!req.isMultipart()) throw new RequestError(400, 'image', 'send multipart/form-data with an image file');
  const fields: Record<string, string> = {};
  let image: Buffer | undefined;
  for await (const part of req.parts()) {
    if (part.type !== 'file') {
      if (typeof part.value === 'string') fields[part.fieldname] = part.value;
      continue;
    }
    if (part.fieldname !== 'image' || image) {
      part.file.resume();
      continue;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of part.file) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) throw new RequestError(413, 'image', `image: file exceeds the limit of ${maxBytes} bytes (MAX_IMAGE_BYTES)`);
      chunks.push(chunk as Buffer);
    }
    if (part.file.truncated) throw new RequestError(413, 'image', `image: file exceeds the limit of ${maxBytes} bytes (MAX_IMAGE_BYTES)`);
    image = Buffer.concat(chunks);
  }
  if (!image || image.length === 0) throw new RequestError(400, 'image', 'image: no image file in the form');
  return { image, fields };
}

async function checked(ctx: ApiContext, bytes: Buffer, field: string): Promise<DecodedImage> {
  const limits = { maxImageBytes: ctx.config.MAX_IMAGE_BYTES, maxImagePixels: ctx.config.MAX_IMAGE_PIXELS };
  const img = await checkImageBytesStreaming(bytes, field, limits);
  await assertDecodable(img, field, limits.maxImagePixels);
  return img;
}

/** Stores an uploaded image; ComfyUI's answer `{name, subfolder, type}`. */
export async function storeUpload(ctx: ApiContext, form: UploadForm): Promise<{ name: string; subfolder: string; type: string }> {
  const img = await checked(ctx, form.image, 'image');
  const ref = await ctx.blobs.put(img.bytes, { mime: img.ref.mime, width: img.ref.width, height: img.ref.height });
  return { name: inputUploadFor(ref).filename, subfolder: '', type: form.fields.type === 'temp' || form.fields.type === 'output' ? form.fields.type : 'input' };
}

let sharpModule: Promise<typeof import('sharp').default> | undefined;
const loadSharp = (): Promise<typeof import('sharp').default> => (sharpModule ??= import('sharp').then((m) => m.default));

/** ComfyUI's mask upload: the original (an earlier upload) with the mask's alpha channel, as a new image. */
export async function storeMask(ctx: ApiContext, form: UploadForm): Promise<{ name: string; subfolder: string; type: string }> {
  let ref: unknown;
  try {
    ref = JSON.parse(form.fields.original_ref ?? '');
  } catch {
    throw new RequestError(400, 'original_ref', 'original_ref: a JSON object {filename, subfolder, type} naming an uploaded image is required');
  }
  const filename = ref && typeof ref === 'object' ? (ref as { filename?: unknown }).filename : undefined;
  const m = typeof filename === 'string' ? UPLOAD_NAME.exec(filename) : null;
  if (!m || !(await ctx.blobs.has(m[1]!))) {
    throw new RequestError(404, 'original_ref', `original_ref: ${String(filename)} is not an image uploaded here (POST /upload/image first)`);
  }
  const mask = await checked(ctx, form.image, 'image');
  const original = await ctx.blobs.get(m[1]!);
  const sharp = await loadSharp();
  const limitInputPixels = ctx.config.MAX_IMAGE_PIXELS;
  const meta = await sharp(original, { limitInputPixels }).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const alpha = await sharp(mask.bytes, { limitInputPixels }).ensureAlpha().extractChannel(3).resize(width, height, { fit: 'fill' }).raw().toBuffer();
  const png = await sharp(original, { limitInputPixels })
    .removeAlpha()
    .joinChannel(alpha, { raw: { width, height, channels: 1 } })
    .png()
    .toBuffer();
  const stored = await ctx.blobs.put(png, { mime: 'image/png', width, height });
  return { name: inputUploadFor(stored).filename, subfolder: '', type: 'input' };
}
