/**
 * `/view` each output file → blob store → references. PNGs lose ComfyUI's embedded `prompt`/`workflow`
 * text (they carry per-job file prefixes, so identical renders would differ in bytes) and gain A1111's
 * `parameters` infotext, which depends only on the resolved request: same request and seed, same bytes.
 * Other media (JPEG, WebP, and videos for a video kind) are stored as ComfyUI wrote them, with their mime.
 */
import type { ComfyClient } from '../comfyui/client.ts';
import type { ComfyFileRef } from '../comfyui/graph.ts';
import { readPngSize, stripPngText } from '../comfyui/png-metadata.ts';
import { infotextFor } from '../render/infotext.ts';
import type { BlobRef, RenderRequest } from '../render/types.ts';
import { toFailure } from './failures.ts';
import type { RenderActivities } from './types.ts';
import { clientFor, type ActivityDeps } from './index.ts';

const MIME_BY_EXT: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  webm: 'video/webm',
};

/** The mime of an output file ComfyUI wrote, or undefined for files that are not a render's result. */
export function outputMime(filename: string): string | undefined {
  const ext = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase();
  return ext ? MIME_BY_EXT[ext] : undefined;
}

export function createCollectOutputs(deps: ActivityDeps): RenderActivities['collectOutputs'] {
  return async ({ backend, files, request, itemIndex }) => collectFiles(deps, clientFor(deps, backend), files, request, itemIndex);
}

/** Also called by runPrompt, which stores the outputs of the backend it ran on in the same activity. */
export async function collectFiles(
  deps: Pick<ActivityDeps, 'blobs'>,
  client: ComfyClient,
  files: readonly ComfyFileRef[],
  request: RenderRequest,
  itemIndex: number,
): Promise<BlobRef[]> {
  const refs: BlobRef[] = [];
  for (const file of files) {
    const mime = outputMime(file.filename);
    if (file.type !== 'output' || !mime) continue;
    let data: Buffer;
    try {
      data = (await client.view(file)).data;
    } catch (err) {
      throw toFailure(err);
    }
    if (mime === 'image/png') {
      const png = stripPngText(data, { parameters: infotextFor(request, itemIndex) });
      const { width, height } = readPngSize(png);
      refs.push(await deps.blobs.put(png, { mime, width, height }));
    } else {
      refs.push(await deps.blobs.put(data, { mime }));
    }
  }
  return refs;
}
