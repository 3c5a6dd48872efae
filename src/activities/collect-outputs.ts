/** `/view` each output file → blob store → references (images and videos alike, see store-outputs.ts). */
import type { ComfyClient } from '../comfyui/client.ts';
import type { ComfyFileRef } from '../comfyui/graph.ts';
import type { BlobRef, RenderRequest } from '../render/types.ts';
import { toFailure } from './failures.ts';
import { deleteCollectedOutput } from './comfy-output-cleanup.ts';
import { storeOutputFile } from './store-outputs.ts';
import type { ActivityDeps } from './deps.ts';

/** Called by runPrompt, which stores the outputs of the backend it ran on in the same activity. */
export async function collectFiles(
  deps: Pick<ActivityDeps, 'blobs' | 'config'>,
  client: ComfyClient,
  files: readonly ComfyFileRef[],
  request: RenderRequest,
  itemIndex: number,
): Promise<BlobRef[]> {
  const refs: BlobRef[] = [];
  for (const file of files) {
    let ref: BlobRef | undefined;
    try {
      ref = await storeOutputFile(deps.blobs, client, file, request, itemIndex);
    } catch (err) {
      throw toFailure(err);
    }
    if (!ref) continue;
    refs.push(ref);
    await deleteCollectedOutput(deps.config.COMFYUI_OUTPUT_DIR, file);
  }
  return refs;
}
