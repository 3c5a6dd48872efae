/**
 * Which models a ComfyUI can render: each graph a profile can submit (every kind, with and without a mask, with
 * the most reference images) is built as the service would build it and read against that ComfyUI's
 * `/object_info` with the client's own definite-fact checks (src/comfyui/preflight.ts). Each profile's engine
 * adds the files it needs that the graphs cannot show (its contract, engines/<id>/), and an engine whose own
 * custom nodes are all absent is reported once. Pure: the contract command prints it, the front hides the
 * models it finds unusable from its model lists and reports them in `/health`.
 */
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { missingModelFiles, missingNodeClasses } from '../comfyui/preflight.ts';
import type { CustomNodePackage } from '../comfyui/plugins.ts';
import { engineOf, engines } from './engines/index.ts';
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
    for (const f of engineOf(profile).contract.fileNeeds(profile, info)) addFile(f.file, f.where);
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

/** An engine some profiles run on whose own custom nodes are all absent from this ComfyUI (absent, or failed to import). */
export interface MissingEnginePlugin {
  engine: string;
  package: CustomNodePackage;
  /** The profiles on that engine. */
  users: string[];
}

/** The engines of `profiles` whose plugin has none of its nodes on the ComfyUI that answered `info`. */
export function missingEnginePlugins(profiles: readonly ModelProfile[], info: ObjectInfo): MissingEnginePlugin[] {
  return engines().flatMap((engine) => {
    const plugin = engine.contract.plugin;
    const users = profiles.filter((p) => engineOf(p) === engine).map((p) => p.id);
    if (!plugin || users.length === 0 || plugin.nodes.some((n) => Object.hasOwn(info, n))) return [];
    return [{ engine: engine.id, package: plugin.package, users }];
  });
}
