/** `/view` each output file → blob store → references (images and videos alike, see store-outputs.ts). */
import type { BlobRef } from '../render/types.ts';
import { toFailure } from './failures.ts';
import { storeOutputFile } from './store-outputs.ts';
import type { RenderActivities } from './types.ts';
import { clientFor, type ActivityDeps } from './index.ts';

export function createCollectOutputs(deps: ActivityDeps): RenderActivities['collectOutputs'] {
  return async ({ backend, files, request, itemIndex }) => {
    const client = clientFor(deps, backend);
    const refs: BlobRef[] = [];
    for (const file of files) {
      let ref: BlobRef | undefined;
      try {
        ref = await storeOutputFile(deps.blobs, client, file, request, itemIndex);
      } catch (err) {
        throw toFailure(err);
      }
      if (ref) refs.push(ref);
    }
    return refs;
  };
}
