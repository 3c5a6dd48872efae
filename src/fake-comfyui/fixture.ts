/**
 * The recorded-style `/object_info` fixture (test/fixtures/object_info.json), and the live view the fake
 * serves: like the real server it regenerates the LoadImage / LoadImageMask `image` combo from the files in
 * the input directory root on every request.
 */
import { readFileSync } from 'node:fs';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { objectInfoSchema } from '../comfyui/object-info.ts';
import { listImageFiles } from './files.ts';

export const OBJECT_INFO_FIXTURE_URL = new URL('../../test/fixtures/object_info.json', import.meta.url);

let parsed: ObjectInfo | undefined;

/** The fixture, validated with `objectInfoSchema`. Each call returns a fresh copy (callers may mutate it). */
export function loadObjectInfoFixture(): ObjectInfo {
  parsed ??= objectInfoSchema.parse(JSON.parse(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')));
  return structuredClone(parsed);
}

const IMAGE_LIST_NODES = ['LoadImage', 'LoadImageMask'];

/** `base` with the image-file combos replaced by the input directory's current image files. */
export function withInputFiles(base: ObjectInfo, inputDir: string): ObjectInfo {
  const files = listImageFiles(inputDir);
  const out: ObjectInfo = { ...base };
  for (const name of IMAGE_LIST_NODES) {
    const node = base[name];
    const spec = node?.input.required?.image;
    if (!node || !spec) continue;
    out[name] = {
      ...node,
      input: { ...node.input, required: { ...node.input.required, image: [files, ...spec.slice(1)] } },
    };
  }
  return out;
}
