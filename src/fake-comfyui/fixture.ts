/**
 * The recorded `/object_info` (test/fixtures/object_info.json, node schemas verbatim from a real ComfyUI
 * 0.33.0), and the live view the fake serves: like the real server it regenerates the LoadImage /
 * LoadImageMask `image` combo from the files in the input directory root on every request.
 */
import { readFileSync } from 'node:fs';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { objectInfoSchema } from '../comfyui/object-info.ts';
import { listImageFiles } from './files.ts';
import type { RawObjectInfo } from './node-schema.ts';
import { isObject } from './node-schema.ts';

export const OBJECT_INFO_FIXTURE_URL = new URL('../../test/fixtures/object_info.json', import.meta.url);

let raw: RawObjectInfo | undefined;

/** The fixture exactly as recorded (what the fake serves). Each call returns a fresh copy. */
export function loadRawObjectInfo(): RawObjectInfo {
  raw ??= JSON.parse(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')) as RawObjectInfo;
  return structuredClone(raw);
}

/** The fixture as the client reads it (`objectInfoSchema`), for tests of client code. */
export function loadObjectInfoFixture(): ObjectInfo {
  return objectInfoSchema.parse(loadRawObjectInfo());
}

const IMAGE_LIST_NODES = ['LoadImage', 'LoadImageMask'];

/** `base` with the image-file combos replaced by the input directory's current image files. */
export function withInputFiles(base: RawObjectInfo, inputDir: string): RawObjectInfo {
  const files = listImageFiles(inputDir);
  const out: RawObjectInfo = { ...base };
  for (const name of IMAGE_LIST_NODES) {
    const node = base[name];
    const required = node?.input?.required;
    const spec = required?.image;
    if (!node || !isObject(required) || !Array.isArray(spec)) continue;
    out[name] = { ...node, input: { ...node.input, required: { ...required, image: [files, ...spec.slice(1)] } } };
  }
  return out;
}
