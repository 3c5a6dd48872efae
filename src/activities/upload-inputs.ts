import { ApplicationFailure } from '@temporalio/common';
import type { Backend, InputUpload } from '../contracts/render.ts';
import { toFailure } from './failures.ts';
import { clientFor, type ActivityDeps } from './deps.ts';
import { FailureType } from '../contracts/failures.ts';
import { BlobNotFoundError } from '../blobs/store.ts';

/**
 * Blob → ComfyUI `/upload/image` under its content-addressed name, by runPrompt before it submits and again
 * when ComfyUI lost its input files (restarted on a fresh input folder). Without `overwrite`, ComfyUI
 * compares hashes and writes nothing for identical bytes, so a retry is a no-op.
 */
export async function uploadAll(deps: Pick<ActivityDeps, 'blobs' | 'clients'>, backend: Backend, uploads: readonly InputUpload[]): Promise<void> {
  const client = clientFor(deps, backend);
  for (const u of uploads) {
    let bytes: Blob;
    try {
      bytes = await deps.blobs.getBlob(u.blob.sha256, u.blob.mime);
    } catch (err) {
      if (err instanceof BlobNotFoundError) throw ApplicationFailure.nonRetryable(err.message, FailureType.InvalidRender);
      throw err;
    }
    try {
      const res = await client.uploadImage({ bytes, filename: u.filename, subfolder: u.subfolder, type: 'input', mime: u.blob.mime });
      if (res.name !== u.filename) {
        // Another file with different bytes holds our content-addressed name: graphs would read the wrong
        // image. Not retryable: someone must clean ComfyUI's input folder.
        throw ApplicationFailure.nonRetryable(
          `ComfyUI stored ${u.subfolder}/${u.filename} as ${res.name}: a different file already has that name`,
          FailureType.InvalidRender,
        );
      }
    } catch (err) {
      throw toFailure(err);
    }
  }
}
