/**
 * `/view` each output file → blob store → references. PNGs lose ComfyUI's embedded `prompt`/`workflow`
 * text (they carry per-job file prefixes, so identical renders would differ in bytes) and gain A1111's
 * `parameters` infotext, which depends only on the resolved request: same request and seed, same bytes.
 */
import { readPngSize, stripPngText } from '../comfyui/png-metadata.ts';
import { infotextFor } from '../render/infotext.ts';
import { encodeOutput } from '../images/encode.ts';
import type { BlobRef } from '../render/types.ts';
import { toFailure } from './failures.ts';
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
        const infotext = infotextFor(request, itemIndex);
        const png = stripPngText(data, { parameters: infotext });
        if (request.output && request.output.format !== 'png') {
          // A1111 `samples_format`: the API answers in the configured format, the infotext in its EXIF.
          const enc = await encodeOutput(png, request.output, infotext);
          refs.push(await deps.blobs.put(enc.data, { mime: enc.mime, width: enc.width, height: enc.height }));
          continue;
        }
        const { width, height } = readPngSize(png);
        refs.push(await deps.blobs.put(png, { mime: 'image/png', width, height }));
      } else {
        refs.push(await deps.blobs.put(data, { mime: /\.webp$/i.test(file.filename) ? 'image/webp' : 'image/jpeg' }));
      }
    }
    return refs;
  };
}
