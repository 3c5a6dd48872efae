/**
 * One ComfyUI output file → blob store → reference, chosen by the file's type (what ComfyUI reports, e.g.
 * SaveVideo's mp4 under `images` with `animated: [true]`, is told apart by extension, not by key):
 * - PNGs lose ComfyUI's embedded `prompt`/`workflow` text (they carry per-job file prefixes, so identical
 *   renders would differ in bytes) and gain A1111's `parameters` infotext, which depends only on the
 *   resolved request: same request and seed, same bytes; re-encoded when the request asks for JPEG or WebP
 *   (A1111 `samples_format`). JPEG/WebP that ComfyUI wrote are stored as they are.
 * - Videos are streamed from `/view` straight into the store (hashed on the way): never whole in memory,
 *   so a 500 MB video costs a few hundred KB of buffers, and only the reference enters history.
 */
import type { ComfyClient } from '../comfyui/client.ts';
import type { ComfyFileRef } from '../comfyui/graph.ts';
import { readPngSize, stripPngText } from '../comfyui/png-metadata.ts';
import { infotextFor } from '../infotext/format.ts';
import { encodeOutput } from '../images/encode.ts';
import { pngOneColour } from '../images/png-colour.ts';
import type { BlobRef, RenderRequest } from '../contracts/render.ts';
import type { BlobStore } from '../blobs/store.ts';

const IMAGE_MIME: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' };
const VIDEO_MIME: Record<string, string> = { mp4: 'video/mp4', webm: 'video/webm', mkv: 'video/x-matroska', mov: 'video/quicktime' };

/** Largest video accepted from ComfyUI (a mistaken graph must not fill the disk). */
export const MAX_VIDEO_BYTES = 8 * 1024 ** 3;

const extOf = (filename: string): string => /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase() ?? '';

/** The mime type of an output file the render keeps, or undefined for files it ignores (temp previews, ...). */
export function outputMime(file: ComfyFileRef): string | undefined {
  if (file.type !== 'output') return undefined;
  const ext = extOf(file.filename);
  return IMAGE_MIME[ext] ?? VIDEO_MIME[ext];
}

export const isVideoMime = (mime: string): boolean => mime.startsWith('video/');

/** Stores one output file; undefined when the file is not a render output. Errors are the client's. */
export async function storeOutputFile(
  blobs: BlobStore,
  client: ComfyClient,
  file: ComfyFileRef,
  request: RenderRequest,
  itemIndex: number,
): Promise<BlobRef | undefined> {
  const mime = outputMime(file);
  if (!mime) return undefined;
  if (isVideoMime(mime)) {
    const { body } = await client.viewStream(file);
    return blobs.putStream(body, { mime, width: request.width, height: request.height }, { maxBytes: MAX_VIDEO_BYTES });
  }
  const data = (await client.view(file)).data;
  if (mime === 'image/png') {
    const infotext = infotextFor(request, itemIndex);
    const png = stripPngText(data, { parameters: infotext });
    if (request.output && request.output.format !== 'png') {
      // A1111 `samples_format`: the API answers in the configured format, the infotext in its EXIF.
      const enc = await encodeOutput(png, request.output, infotext);
      const ref = await blobs.put(enc.data, { mime: enc.mime, width: enc.width, height: enc.height });
      const blank = await pngOneColour(png);
      return blank ? { ...ref, blank } : ref;
    }
    const { width, height } = readPngSize(png);
    const ref = await blobs.put(png, { mime, width, height });
    const blank = await pngOneColour(png);
    return blank ? { ...ref, blank } : ref;
  }
  return blobs.put(data, { mime });
}

const AUDIO_MIME: Record<string, string> = { mp3: 'audio/mpeg', flac: 'audio/flac', wav: 'audio/wav', opus: 'audio/ogg', ogg: 'audio/ogg', m4a: 'audio/mp4' };

/** Any file a client's own graph reports (saved, previewed, audio, video): its mime, or undefined for other files (latents, 3D). */
export function promptFileMime(file: ComfyFileRef): string | undefined {
  if (file.type === 'input') return undefined;
  const ext = extOf(file.filename);
  return IMAGE_MIME[ext] ?? VIDEO_MIME[ext] ?? AUDIO_MIME[ext];
}

/**
 * A `prompt` render's file, stored as ComfyUI wrote it (its embedded workflow included: the client's own
 * graph is what it describes), streamed so a video never sits whole in memory.
 */
export async function storePromptFile(blobs: BlobStore, client: ComfyClient, file: ComfyFileRef): Promise<BlobRef | undefined> {
  const mime = promptFileMime(file);
  if (!mime) return undefined;
  if (!mime.startsWith('image/')) {
    const { body } = await client.viewStream(file);
    return blobs.putStream(body, { mime }, { maxBytes: MAX_VIDEO_BYTES });
  }
  const data = (await client.view(file)).data;
  if (mime === 'image/png') {
    const { width, height } = readPngSize(data);
    return blobs.put(data, { mime, width, height });
  }
  return blobs.put(data, { mime });
}
