/**
 * Which models a ComfyUI can render: each graph a profile can submit (every kind, with and without a mask, with
 * the most reference images) is built as the service would build it and read against that ComfyUI's
 * `/object_info` with the client's own definite-fact checks (src/comfyui/preflight.ts). Models on the sglang
 * engine add the files its loader needs that the graphs cannot show (the unet files when the plugin's loader is
 * absent, the BF16 companion beside an H3 GGUF). Pure: the contract command prints it, the front hides the
 * models it finds unusable from its model lists and reports them in `/health`.
 */
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { comboOptions, inputSpec } from '../comfyui/object-info.ts';
import { missingModelFiles, missingNodeClasses } from '../comfyui/preflight.ts';
import { engineFiles, engineOf } from './families/engine.ts';
import { controlSampleGraphs, sampleGraphs } from './sample-graphs.ts';
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { ModelProfile } from './profile.ts';

/** What one profile lacks on a ComfyUI: node classes, and model files with where they were looked for. */
export interface ProfileNeeds {
  id: string;
  graphs: number;
  missingNodes: string[];
  missingFiles: Array<{ file: string; where: string }>;
  /** What only its control units need (ControlNet, model patch, Redux): the model renders, such units get a 4xx. */
  missingControl: { nodes: string[]; files: Array<{ file: string; where: string }> };
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
    const control = graphNeeds(controlSampleGraphs(profile), info);
    return {
      id: profile.id,
      graphs: graphs.length,
      missingNodes: [...nodes].sort(),
      missingFiles: [...files].sort(([a], [b]) => a.localeCompare(b)).flatMap(([file, where]) => [...where].map((w) => ({ file, where: w }))),
      missingControl: {
        nodes: control.nodes.filter((n) => !nodes.has(n)),
        files: control.files.filter((f) => !files.has(f.file)),
      },
    };
  });
}

function graphNeeds(graphs: readonly ComfyGraph[], info: ObjectInfo): { nodes: string[]; files: Array<{ file: string; where: string }> } {
  const nodes = new Set<string>();
  const files = new Map<string, { file: string; where: string }>();
  for (const graph of graphs) {
    for (const p of missingNodeClasses(graph, info)) nodes.add(p.classType ?? `(node ${p.nodeId} without class_type)`);
    for (const p of missingModelFiles(graph, info))
      files.set(`${p.value as string} ${p.classType}.${p.input}`, { file: p.value as string, where: `${p.classType}.${p.input}` });
  }
  return { nodes: [...nodes].sort(), files: [...files.values()].sort((a, b) => a.file.localeCompare(b.file)) };
}

/** One line saying why a model cannot render on this ComfyUI; undefined when it can. */
export function unusableReason(n: ProfileNeeds): string | undefined {
  const parts = [...n.missingFiles.map((f) => `model file ${f.file} is missing`), ...n.missingNodes.map((c) => `node class ${c} is not installed`)];
  return parts.length > 0 ? [...new Set(parts)].join('; ') : undefined;
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
