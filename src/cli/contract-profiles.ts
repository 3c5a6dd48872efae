/**
 * The profile half of `comfy-durable contract`: does this ComfyUI have every node class and model file the
 * model profiles' graphs use? Each graph a profile can submit (every kind, with and without a mask, with the
 * most reference images) is built as the service would build it and read against the live `/object_info`
 * with the client's own definite-fact checks (src/comfyui/preflight.ts). What is missing is reported one
 * line per node class and one line per model file, naming the profiles that need it; when nothing is
 * missing, one line per profile says so. Models on the sglang engine add (contract-engines.ts) one line for
 * SGLang's plugin when none of its nodes is there, and their files are checked even then: the unet files in
 * models/diffusion_models and the BF16 companions the plugin needs beside an H3 GGUF.
 */
import type { ContractResult } from '../comfyui/contract.ts';
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { packageOfNode } from '../comfyui/plugins.ts';
import { missingModelFiles, missingNodeClasses } from '../comfyui/preflight.ts';
import { planRender } from '../models/plan.ts';
import { defaultVideoSpec } from '../models/video.ts';
import { videoTasksOf } from '../models/video-tasks.ts';
import type { ModelProfile } from '../models/profile.ts';
import type { BlobRef, ControlUnit, RenderRequest } from '../render/types.ts';
import { UNION_CONTROL_TYPES } from '../render/types.ts';
import { controlUnsupported } from '../models/families/controls.ts';

import { engineFileNeeds, pluginCheck } from './contract-engines.ts';

interface Need {
  profiles: Set<string>;
  where: Set<string>;
}

export function profileChecks(profiles: readonly ModelProfile[], info: ObjectInfo): ContractResult[] {
  const nodes = new Map<string, Need>();
  const files = new Map<string, Need>();
  const graphCount = new Map<string, number>();
  const need = (map: Map<string, Need>, key: string, profile: string, where: string): void => {
    const n = map.get(key) ?? { profiles: new Set(), where: new Set() };
    n.profiles.add(profile);
    n.where.add(where);
    map.set(key, n);
  };

  for (const profile of profiles) {
    const graphs = sampleGraphs(profile);
    graphCount.set(profile.id, graphs.length);
    for (const graph of graphs) {
      for (const p of missingNodeClasses(graph, info)) need(nodes, p.classType ?? `(node ${p.nodeId} without class_type)`, profile.id, p.nodeId);
      for (const p of missingModelFiles(graph, info)) need(files, p.value as string, profile.id, `${p.classType}.${p.input}`);
    }
    for (const f of engineFileNeeds(profile, info)) need(files, f.file, profile.id, f.where);
  }

  const results: ContractResult[] = [...pluginCheck(profiles, info)];
  for (const [cls, n] of [...nodes].sort(([a], [b]) => a.localeCompare(b))) {
    const pkg = packageOfNode(cls);
    results.push({
      name: `node class ${cls} is not installed${pkg ? ` (custom node ${pkg.source})` : ''}`,
      ok: false,
      detail: `needed by ${[...n.profiles].join(', ')}`,
    });
  }
  for (const [file, n] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    results.push({
      name: `model file ${file} is missing`,
      ok: false,
      detail: `not in ${[...n.where].join(', ')}; needed by ${[...n.profiles].join(', ')}`,
    });
  }
  for (const profile of profiles) {
    const lacking = [...nodes.values(), ...files.values()].some((n) => n.profiles.has(profile.id));
    if (lacking) continue;
    results.push({
      name: `${profile.id}${profile.engine === 'sglang' ? ' (engine sglang)' : ''}: every node class and model file its graphs use is installed`,
      ok: true,
      detail: `${graphCount.get(profile.id) ?? 0} graphs (${profile.kinds.join(', ')})`,
    });
  }
  return results;
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
  // One txt2img per control unit the profile's files allow, so each ControlNet / patch / Redux file is checked.
  if (profile.kinds.includes('txt2img')) {
    for (const unit of sampleControlUnits()) {
      if (controlUnsupported(profile, unit) === undefined) requests.push(sampleRequest(profile, { kind: 'txt2img', controls: [unit] }));
    }
  }
  return requests.map((r) => planRender(r, { renderId: 'render-contract' }).items[0]!.graph);
}

/** A unit of every control type and an image prompt: the families pick the ones their files cover. */
function sampleControlUnits(): ControlUnit[] {
  return [
    { kind: 'image-prompt', image: ref(20), strength: 1 },
    ...UNION_CONTROL_TYPES.map((controlType): ControlUnit => ({
      kind: 'controlnet',
      image: ref(21),
      preprocessor: 'none',
      controlType,
      strength: 1,
      start: 0,
      end: 1,
    })),
  ];
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
