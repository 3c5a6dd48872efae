/**
 * Live sampler previews for `/sdapi/v1/progress` `current_image`, passed from the worker to the front through
 * DATA_DIR (which they share, as they share blobs): the worker writes the latest ComfyUI preview frame of the
 * prompt it runs to `previews/<renderId>`; the front reads it. Previews cost ComfyUI time, so they are asked
 * for (`extra_data.preview_method`) only while some client polls progress: the front touches
 * `previews/.polled` on each poll and the worker looks at its age when it submits a prompt.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A poll this recent means someone watches: the next prompts are submitted with previews. */
export const POLL_WINDOW_MS = 120_000;
const dirOf = (dataDir: string): string => path.join(dataDir, 'previews');
const safe = (renderId: string): string => renderId.replace(/[^A-Za-z0-9._-]/g, '_');

let lastMark = 0;

export function markPolled(dataDir: string, now = Date.now()): void {
  if (now - lastMark < 2_000) return;
  lastMark = now;
  try {
    const dir = dirOf(dataDir);
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, '.polled');
    try {
      utimesSync(file, new Date(now), new Date(now));
    } catch {
      writeFileSync(file, '');
    }
  } catch {
    // previews are a nicety: never fail a progress poll over them
  }
}

export function previewsWanted(dataDir: string, now = Date.now()): boolean {
  try {
    return now - statSync(path.join(dirOf(dataDir), '.polled')).mtimeMs < POLL_WINDOW_MS;
  } catch {
    return false;
  }
}

export function writePreview(dataDir: string, renderId: string, image: Buffer): void {
  const dir = dirOf(dataDir);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, safe(renderId));
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, image);
  renameSync(tmp, file);
}

export function readPreview(dataDir: string, renderId: string): Buffer | undefined {
  try {
    return readFileSync(path.join(dirOf(dataDir), safe(renderId)));
  } catch {
    return undefined;
  }
}

export function clearPreview(dataDir: string, renderId: string): void {
  rmSync(path.join(dirOf(dataDir), safe(renderId)), { force: true });
}
