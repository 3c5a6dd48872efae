/** The conditioning images of a video request, in request order, and their decoding and type check. */
import { checkImageBytes, decodeImageInput, type DecodedImage } from '../../images/decode.ts';
import { RequestError } from '../../errors/request-error.ts';
import type { VideoFields } from './schema.ts';

/** An image sent as a multipart file part (`input_reference`, `input_references`). */
export interface UploadedFile {
  field: 'input_reference' | 'input_references';
  bytes: Buffer;
  mimetype?: string;
  filename?: string;
}

export interface ImageInput {
  field: string;
  value?: string;
  file?: UploadedFile;
}

export function collectImageInputs(f: VideoFields, files: UploadedFile[]): ImageInput[] {
  const out: ImageInput[] = [];
  const firstFiles = files.filter((x) => x.field === 'input_reference');
  if (firstFiles.length > 1 || (firstFiles.length === 1 && f.input_reference !== undefined)) {
    throw new RequestError(400, 'input_reference', 'input_reference: send one image (use input_references for more)');
  }
  if (firstFiles[0]) out.push({ field: 'input_reference', file: firstFiles[0] });
  else if (f.input_reference !== undefined && f.input_reference !== '') out.push({ field: 'input_reference', value: f.input_reference });
  let i = 0;
  for (const v of f.input_references ?? []) out.push({ field: `input_references.${i++}`, value: v });
  for (const file of files.filter((x) => x.field === 'input_references')) out.push({ field: `input_references.${i++}`, file });
  return out;
}

export function decodeInput(input: ImageInput, limits: { maxImageBytes: number; maxImagePixels: number }): DecodedImage {
  if (input.value !== undefined) return decodeImageInput(input.value, input.field, limits);
  checkUploadType(input);
  return checkImageBytes(input.file!.bytes, input.field, limits);
}

export function checkUploadType(input: ImageInput): void {
  const type = input.file?.mimetype;
  if (type && /^(video|audio)\//i.test(type)) {
    throw new RequestError(400, input.field, `${input.field}: ${type} is not an image; only image references (PNG, JPEG, WebP) are supported`);
  }
}
