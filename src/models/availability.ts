/**
 * Which models a ComfyUI can render: each graph a profile can submit (every kind, with and without a mask, with
 * the most reference images) is built as the service would build it and read against that ComfyUI's
 * `/object_info` with the client's own definite-fact checks (src/comfyui/preflight.ts). Models on the sglang
 * engine add the files its loader needs that the graphs cannot show (the unet files when the plugin's loader is
 * absent, the BF16 companion beside an H3 GGUF). Pure: the contract command prints it, the front hides the
 * models it finds unusable from its model lists and reports them in `/health`.
 */
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { comboOptions, inputSpec } from '../comfyui/object-info.ts';
import { missingModelFiles, missingNodeClasses } from '../comfyui/preflight.ts';
import type { BlobRef, RenderRequest } from '../render/types.ts';
import { engineFiles, engineOf } from './families/engine.ts';
import { planRender } from './plan.ts';
import type { ModelProfile } from './profile.ts';
import { defaultVideoSpec } from './video.ts';
import { videoTasksOf } from './video-tasks.ts';

/** What one profile lacks on a ComfyUI: node classes, and model files with where they were looked for. */
export interface ProfileNeeds {
  id: string;
  graphs: number;
  missingNodes: string[];
  missingFiles: Array<{ file: string; where: string }>;
}

export const SGLD_LOADER = 'SGLDUNETLoader';
/** The integrated-mode nodes the sglang engine's graphs use. */
export const SGLD_NODES = [SGLD_LOADER, 'SGLDOptions', 'SGLDLoraLoader'];

export const onSglang = (p: ModelProfile): boolean => engineOf(p) === 'sglang' && p.sglang !== undefined;

/** What each profile lacks on the ComfyUI that answered `info` (empty lists: it renders there). */
export function profileNeeds(profiles: readonly ModelProfile[], info: ObjectInfo): ProfileNeeds[] {
  return profiles.map((profile) => {
    const nodes = new Set<string>();
    const files = new Map<string, Set<string>>();
    const addFile = (file: string, where: string): void => {
      files.set(file, (files.get(file) ?? new Set()).add(where));
    };
    const graphs = sampleGraphs(profile);
    for (const graph of graphs) {
      for (const p of missingNodeClasses(graph, info)) nodes.add(p.classType ?? `(node ${p.nodeId} without class_type)`);
      for (const p of missingModelFiles(graph, info)) addFile(p.value as string, `${p.classType}.${p.input}`);
    }
    for (const f of engineFileNeeds(profile, info)) addFile(f.file, f.where);
    return {
      id: profile.id,
      graphs: graphs.length,
      missingNodes: [...nodes].sort(),
      missingFiles: [...files].sort(([a], [b]) => a.localeCompare(b)).flatMap(([file, where]) => [...where].map((w) => ({ file, where: w }))),
    };
  });
}

/** One line saying why a model cannot render on this ComfyUI; undefined when it can. */
export function unusableReason(n: ProfileNeeds): string | undefined {
  const parts = [...n.missingFiles.map((f) => `model file ${f.file} is missing`), ...n.missingNodes.map((c) => `node class ${c} is not installed`)];
  return parts.length > 0 ? [...new Set(parts)].join('; ') : undefined;
}

/** The distinct graphs a profile can submit: each kind; img2img with and without a mask; edits with 1..max refs. */
export function sampleGraphs(profile: ModelProfile): ComfyGraph[] {
  const requests: RenderRequest[] = [];
  for (const kind of profile.kinds) {
    if (kind === 'img2img') {
      requests.push(sampleRequest(profile, { kind, initImage: ref(1), denoise: 0.5 }));
      requests.push(sampleRequest(profile, { kind, initImage: ref(2), mask: ref(3), denoise: 0.9 }));
    } else if (kind === 'video') {
      // Every task the model has: without images, with a first frame, with first+last frames, with references.
      const base = defaultVideoSpec(profile);
      for (const task of videoTasksOf(profile)) {
        const frames = task.images === 'frames' ? (task.positions ?? [0]) : [];
        const images = { ...(frames.includes(0) ? { firstFrame: ref(1) } : {}), ...(frames.includes(-1) ? { lastFrame: ref(2) } : {}) };
        const references = task.images === 'references' ? [ref(3), ref(4)] : [];
        requests.push(sampleRequest(profile, { kind, video: { ...base, task: task.id, ...images, references } }));
      }
    } else if (kind === 'edit') {
      for (let n = 1; n <= Math.max(1, profile.maxExtraImages); n++) {
        requests.push(sampleRequest(profile, { kind, extraImages: Array.from({ length: n }, (_, i) => ref(10 + i)) }));
      }
    } else {
      requests.push(sampleRequest(profile, { kind }));
    }
  }
  return requests.map((r) => planRender(r, { renderId: 'render-contract' }).items[0]!.graph);
}

/** Images are never read by these checks: LoadImage's file is ComfyUI's to validate at submit time. */
function ref(n: number): BlobRef {
  return { sha256: n.toString(16).padStart(64, '0'), size: 1, mime: 'image/png', width: 64, height: 64 };
}

function sampleRequest(profile: ModelProfile, over: Partial<RenderRequest> & Pick<RenderRequest, 'kind'>): RenderRequest {
  const d = profile.defaults;
  return {
    model: profile.id,
    prompt: 'contract',
    negativePrompt: '',
    seed: 1,
    steps: d.steps,
    cfg: d.cfg,
    ...(d.guidance !== undefined ? { guidance: d.guidance } : {}),
    sampler: d.sampler,
    scheduler: d.scheduler,
    width: d.width,
    height: d.height,
    batchSize: 1,
    nIter: 1,
    denoise: 1,
    extraImages: [],
    report: { samplerName: d.sampler, scheduler: d.scheduler, requestedWidth: d.width, requestedHeight: d.height },
    ...over,
  };
}

function listOf(info: ObjectInfo, cls: string, input: string): string[] | undefined {
  const node = info[cls];
  const spec = node ? inputSpec(node, input) : undefined;
  const options = spec ? comboOptions(spec) : undefined;
  return options?.filter((v): v is string => typeof v === 'string');
}

/** The files of models/diffusion_models this ComfyUI lists: the plugin's own list, else its core loaders'. */
function diffusionModels(info: ObjectInfo): { files: Set<string>; where: string } {
  const sgld = listOf(info, SGLD_LOADER, 'unet_name');
  if (sgld) return { files: new Set(sgld), where: `${SGLD_LOADER}.unet_name` };
  const files = new Set([...(listOf(info, 'UNETLoader', 'unet_name') ?? []), ...(listOf(info, 'UnetLoaderGGUF', 'unet_name') ?? [])]);
  return { files, where: 'models/diffusion_models (UNETLoader, UnetLoaderGGUF)' };
}

/**
 * Files an sglang-engine profile needs that this ComfyUI lacks, beyond what its graphs' loaders report: the
 * unet roles when the plugin's loader is absent (its list is then unknown), and the companions always.
 */
export function engineFileNeeds(profile: ModelProfile, info: ObjectInfo): Array<{ file: string; where: string }> {
  if (!onSglang(profile)) return [];
  const spec = profile.sglang!;
  const dm = diffusionModels(info);
  const out: Array<{ file: string; where: string }> = [];
  if (!Object.hasOwn(info, SGLD_LOADER)) {
    const files = engineFiles(profile);
    for (const role of Object.keys(spec.files)) {
      const file = files[role];
      if (file && !dm.files.has(file)) out.push({ file, where: dm.where });
    }
  }
  for (const [role, companion] of Object.entries(spec.companions ?? {})) {
    const of = engineFiles(profile)[role];
    if (!dm.files.has(companion)) out.push({ file: companion, where: `${dm.where} (the BF16 companion of ${of ?? role}, read for architecture detection)` });
  }
  return out;
}
