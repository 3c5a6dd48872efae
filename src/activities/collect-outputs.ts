/**
 * `/view` each output file → blob store → references. PNGs lose ComfyUI's embedded `prompt`/`workflow`
 * text (they carry per-job file prefixes, so identical renders would differ in bytes) and gain A1111's
 * `parameters` infotext, which depends only on the resolved request: same request and seed, same bytes.
 */
import { readPngSize, stripPngText } from '../comfyui/png-metadata.ts';
import { infotextFor } from '../render/infotext.ts';
import type { BlobRef } from '../render/types.ts';
import { toFailure } from './failures.ts';
import { deleteCollectedOutput } from './comfy-output-cleanup.ts';
import type { RenderActivities } from './types.ts';
import { clientFor, type ActivityDeps } from './index.ts';

const IMAGE_EXT = /\.(png|jpe?g|webp)$/i;

export function createCollectOutputs(deps: ActivityDeps): RenderActivities['collectOutputs'] {
  return async ({ backend, files, request, itemIndex }) => {
    const client = clientFor(deps, backend);
    const refs: BlobRef[] = [];
    for (const file of files) {
      if (file.type !== 'output' || !IMAGE_EXT.test(file.filename)) continue;
      let data: Buffer;
      try {
        data = (await client.view(file)).data;
      } catch (err) {
        throw toFailure(err);
      }
      if (/\.png$/i.test(file.filename)) {
        const png = stripPngText(data, { parameters: infotextFor(request, itemIndex) });
        const { width, height } = readPngSize(png);
        refs.push(await deps.blobs.put(png, { mime: 'image/png', width, height }));
      } else {
        refs.push(await deps.blobs.put(data, { mime: /\.webp$/i.test(file.filename) ? 'image/webp' : 'image/jpeg' }));
      }
      await deleteCollectedOutput(deps.config.COMFYUI_OUTPUT_DIR, file);
    }
    return refs;
  };
}
