/**
 * `POST /sdapi/v1/png-info`: the generation parameters an image carries (the PNG `parameters` text chunk,
 * or the EXIF UserComment of a JPEG / WebP), and A1111's parse of that infotext.
 */
import { readPngText } from '../../comfyui/png-metadata.ts';
import { decodeImageInput, type ImageLimits } from '../../images/decode.ts';
import { readExifComment } from '../../images/encode.ts';
import { RequestError, describeValue } from './errors.ts';

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
  const decoded = decodeImageInput(image, 'image', limits);
  let items: Record<string, string> = {};
  if (decoded.ref.mime === 'image/png') {
    items = readPngText(decoded.bytes);
  } else {
    const comment = await readExifComment(decoded.bytes);
    if (comment !== undefined) items = { parameters: comment };
  }
  const info = items.parameters ?? '';
  const rest = { ...items };
  delete rest.parameters;
  return { info, items: rest, parameters: info ? parseInfotext(info) : {} };
}

/** A1111's `parse_generation_parameters`, for the keys this service writes (values as strings, Size split). */
export function parseInfotext(text: string): Record<string, string> {
  const lines = text.trim().split('\n');
  const last = lines.length > 1 || /^\w[\w ]*: /.test(lines[0] ?? '') ? (lines.pop() ?? '') : '';
  const out: Record<string, string> = {};
  const prompt: string[] = [];
  const negative: string[] = [];
  let inNegative = false;
  for (const line of lines) {
    if (line.startsWith('Negative prompt:')) {
      inNegative = true;
      negative.push(line.slice('Negative prompt:'.length).trim());
    } else (inNegative ? negative : prompt).push(line);
  }
  out.Prompt = prompt.join('\n');
  out['Negative prompt'] = negative.join('\n');
  // `Key: value` pairs; values with , or : are JSON-quoted by A1111's quote().
  const re = /\s*([\w ][\w \-/]*):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$)/g;
  for (const m of last.matchAll(re)) {
    const key = m[1]!.trim();
    let value = m[2]!.trim();
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        // kept as written
      }
    }
    out[key] = value;
    const size = /^(\d+)x(\d+)$/.exec(value);
    if (size && (key === 'Size' || key === 'Hires resize')) {
      out[`${key}-1`] = size[1]!;
      out[`${key}-2`] = size[2]!;
    }
  }
  return out;
}
