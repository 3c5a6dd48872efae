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
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { packageOfNode } from '../comfyui/plugins.ts';
import { missingModelFiles, missingNodeClasses } from '../comfyui/preflight.ts';
import type { ModelProfile } from '../models/profile.ts';
import { sampleGraphs } from '../models/sample-graphs.ts';

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
