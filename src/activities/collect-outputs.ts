/** `/view` each output file → blob store → references (images and videos alike, see store-outputs.ts). */
import type { ComfyClient } from '../comfyui/client.ts';
import type { ComfyFileRef } from '../comfyui/graph.ts';
import type { BlobRef, RenderRequest } from '../contracts/render.ts';
import { toFailure } from './failures.ts';
import { deleteCollectedOutput } from './comfy-output-cleanup.ts';
import { storeOutputFile, storePromptFile } from './store-outputs.ts';
import type { HistoryOutputs } from '../comfyui/schemas.ts';
import { extractFiles } from '../comfyui/status.ts';
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

/** Ui values kept beside the files (`animated`, `text`) are small; a node's larger ones are left out of history. */
const MAX_UI_VALUE_CHARS = 16_384;

/**
 * A `prompt` render's outputs: every file ComfyUI reported (saved or previewed) into the blob store, and its
 * `outputs` per node with each file entry replaced by `{output: i}`, the index of its blob.
 */
export async function collectPromptOutputs(
  deps: Pick<ActivityDeps, 'blobs' | 'config'>,
  client: ComfyClient,
  outputs: HistoryOutputs,
): Promise<{ refs: BlobRef[]; ui: Record<string, Record<string, unknown[]>> }> {
  const refs: BlobRef[] = [];
  const ui: Record<string, Record<string, unknown[]>> = {};
  const stored = new Map<string, number>();
  for (const file of extractFiles(outputs)) {
    const key = `${file.type}/${file.subfolder}/${file.filename}`;
    if (stored.has(key)) continue;
    let ref: BlobRef | undefined;
    try {
      ref = await storePromptFile(deps.blobs, client, file);
    } catch (err) {
      throw toFailure(err);
    }
    if (!ref) continue;
    stored.set(key, refs.length);
    refs.push(ref);
    if (file.type === 'output') await deleteCollectedOutput(deps.config.COMFYUI_OUTPUT_DIR, file);
  }
  for (const [nodeId, values] of Object.entries(outputs)) {
    const node: Record<string, unknown[]> = {};
    for (const [name, value] of Object.entries(values)) {
      if (!Array.isArray(value)) continue;
      const mapped = value.flatMap((v: unknown) => {
        const f = v && typeof v === 'object' ? (v as { filename?: unknown; subfolder?: unknown; type?: unknown }) : undefined;
        if (f && typeof f.filename === 'string') {
          const subfolder = typeof f.subfolder === 'string' ? f.subfolder : '';
          const i = stored.get(`${typeof f.type === 'string' ? f.type : ''}/${subfolder}/${f.filename}`);
          return i === undefined ? [] : [{ output: i }];
        }
        return [v];
      });
      if (JSON.stringify(mapped).length <= MAX_UI_VALUE_CHARS) node[name] = mapped;
    }
    ui[nodeId] = node;
  }
  return { refs, ui };
}
