/**
 * The recorded `/object_info` (tools/fake-comfyui/fixtures/object_info.json, node schemas verbatim from a real ComfyUI
 * 0.33.0), and the live view the fake serves: like the real server it regenerates the LoadImage /
 * LoadImageMask `image` combo from the files in the input directory root on every request.
 * The loaders' model-file lists also get every file a registered profile names, and the background-removal and
 * SAM3 files (`withProfileFiles`).
 */
import { readFileSync } from 'node:fs';
import { controlSampleGraphs, sampleGraphs } from '../../src/models/sample-graphs.ts';
import type { ObjectInfo } from '../../src/comfyui/object-info.ts';
import { objectInfoSchema } from '../../src/comfyui/object-info.ts';
import { missingModelFiles } from '../../src/comfyui/preflight.ts';
import { listProfiles } from '../../src/models/registry.ts';
import { SEGMENTATION_FILES, segmentationSampleGraphs, type SegmentationRole } from '../../src/models/segmentation.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { listImageFiles } from './files.ts';
import type { RawObjectInfo } from './node-schema.ts';
import { isObject } from './node-schema.ts';

export const OBJECT_INFO_FIXTURE_URL = new URL('./fixtures/object_info.json', import.meta.url);

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

/**
 * The recorded fixture with the model files every registered profile's own graphs need (not its optional
 * control files: those stay as recorded), parsed: what tests take files or nodes away from, so a model added
 * as one profile file is there too.
 */
export function loadObjectInfoWithProfileFiles(): ObjectInfo {
  const info = loadRawObjectInfo();
  addGraphFiles(info, listProfiles().flatMap(sampleGraphs));
  return objectInfoSchema.parse(info);
}

let merged: { key: string; base: RawObjectInfo; info: RawObjectInfo } | undefined;

/**
 * `base` with every model file a registered profile names added to the list of the loader input its graphs
 * put it in, as a ComfyUI with those files installed would list them. The recorded fixture stays verbatim;
 * a new profile (a file in src/models/profiles, or one registered at run time) renders on the fake without
 * editing it. The graphs are the ones `comfy-durable contract` checks: every kind and task of each profile.
 */
export function withProfileFiles(base: RawObjectInfo): RawObjectInfo {
  const key = JSON.stringify(listProfiles());
  if (merged?.base === base && merged.key === key) return merged.info;
  const info = structuredClone(base);
  // The background-removal and SAM3 files too (src/models/segmentation.ts), as a ComfyUI with them installed.
  const segmentation = (Object.keys(SEGMENTATION_FILES) as SegmentationRole[]).flatMap(segmentationSampleGraphs);
  addGraphFiles(info, [...listProfiles().flatMap((p) => [...sampleGraphs(p), ...controlSampleGraphs(p)]), ...segmentation]);
  merged = { key, base, info };
  return info;
}

/** Adds to `info`'s loader lists every model file `graphs` name that the lists lack. */
function addGraphFiles(info: RawObjectInfo, graphs: ComfyGraph[]): void {
  const parsed = objectInfoSchema.parse(structuredClone(info));
  for (const graph of graphs) {
    for (const p of missingModelFiles(graph, parsed)) {
      if (p.classType && p.input) addToList(info, p.classType, p.input, p.value as string);
      if (p.classType && p.input) addToList(parsed, p.classType, p.input, p.value as string);
    }
  }
}

/** Appends `file` to the combo of `cls.input` (a V1 list or a V3 COMBO's options). */
function addToList(info: RawObjectInfo, cls: string, input: string, file: string): void {
  const node = info[cls]?.input;
  const spec = (node?.required as Record<string, unknown> | undefined)?.[input] ?? (node?.optional as Record<string, unknown> | undefined)?.[input];
  if (!Array.isArray(spec)) return;
  const list = Array.isArray(spec[0])
    ? (spec[0] as unknown[])
    : isObject(spec[1]) && Array.isArray(spec[1].options)
      ? (spec[1].options as unknown[])
      : undefined;
  if (list && !list.includes(file)) list.push(file);
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
    out[name] = { ...node, input: { ...node.input, required: { ...required, image: [files, ...(spec as unknown[]).slice(1)] } } };
  }
  return out;
}
