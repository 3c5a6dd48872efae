/**
 * ComfyUI has no API to delete files: each render would leave its images in
 * ComfyUI's output folder forever. When ComfyUI runs on this machine and COMFYUI_OUTPUT_DIR names its
 * output folder, a collected output (now in the blob store) is deleted there. Off by default.
 */
import { unlink } from 'node:fs/promises';
import path from 'node:path';

export async function deleteCollectedOutput(outputDir: string | undefined, file: { filename: string; subfolder?: string }): Promise<void> {
  if (!outputDir) return;
  const root = path.resolve(outputDir);
  const target = path.resolve(root, file.subfolder ?? '', file.filename);
  // Names come from ComfyUI's answer: never follow one out of the folder.
  if (!target.startsWith(root + path.sep)) return;
  await unlink(target).catch(() => undefined);
}
