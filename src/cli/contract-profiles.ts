/**
 * The profile half of `comfy-durable contract`: does this ComfyUI have every node class and model file the
 * model profiles' graphs use? What each profile lacks is computed by src/models/availability.ts (the same
 * check the front uses to leave unusable models out of its lists); here it is reported one line per node
 * class and one line per model file, naming the profiles that need it; when nothing is missing, one line per
 * profile says so. An engine whose own custom nodes are all absent adds one line (contract-engines.ts).
 */
import type { ContractResult } from '../comfyui/contract.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { packageOfNode } from '../comfyui/plugins.ts';
import { profileNeeds, type ProfileNeeds } from '../models/availability.ts';
import { DEFAULT_ENGINE } from '../models/engines/index.ts';
import type { ModelProfile } from '../models/profile.ts';
import type { SegmentationNeeds } from '../models/segmentation.ts';

import { pluginCheck } from './contract-engines.ts';

interface Need {
  profiles: Set<string>;
  where: Set<string>;
}

export function profileChecks(profiles: readonly ModelProfile[], info: ObjectInfo): ContractResult[] {
  return formatNeeds(profiles, profileNeeds(profiles, info), info);
}

/** The unusable profiles of `needs` (those that lack a node class or a file). */
export function unusableProfiles(needs: readonly ProfileNeeds[]): string[] {
  return needs.filter((n) => n.missingNodes.length > 0 || n.missingFiles.length > 0).map((n) => n.id);
}

export function formatNeeds(profiles: readonly ModelProfile[], needs: readonly ProfileNeeds[], info: ObjectInfo): ContractResult[] {
  const nodes = new Map<string, Need>();
  const files = new Map<string, Need>();
  const need = (map: Map<string, Need>, key: string, profile: string, where: string): void => {
    const n = map.get(key) ?? { profiles: new Set(), where: new Set() };
    n.profiles.add(profile);
    n.where.add(where);
    map.set(key, n);
  };
  for (const n of needs) {
    for (const cls of n.missingNodes) need(nodes, cls, n.id, cls);
    for (const f of n.missingFiles) need(files, f.file, n.id, f.where);
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
  results.push(...controlNeedLines(needs));
  const lacking = new Set(unusableProfiles(needs));
  for (const profile of profiles) {
    if (lacking.has(profile.id)) continue;
    results.push({
      name: `${profile.id}${profile.engine && profile.engine !== DEFAULT_ENGINE ? ` (engine ${profile.engine})` : ''}: every node class and model file its graphs use is installed`,
      ok: true,
      detail: `${needs.find((n) => n.id === profile.id)?.graphs ?? 0} graphs (${profile.kinds.join(', ')})`,
    });
  }
  return results;
}

/** What only control units need, one line each: the model renders, a unit that needs it gets a 4xx naming it. */
function controlNeedLines(needs: readonly ProfileNeeds[]): ContractResult[] {
  const lines = new Map<string, { profiles: Set<string>; detail: string }>();
  const add = (name: string, profile: string, detail: string): void => {
    const l = lines.get(name) ?? { profiles: new Set<string>(), detail };
    l.profiles.add(profile);
    lines.set(name, l);
  };
  for (const n of needs) {
    for (const cls of n.missingControl.nodes) add(`node class ${cls} for control units is not installed`, n.id, cls);
    for (const f of n.missingControl.files) add(`control file ${f.file} is missing`, n.id, `not in ${f.where}`);
  }
  return [...lines]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, l]) => ({ name, ok: false, optional: true, detail: `${l.detail}; control units of ${[...l.profiles].join(', ')} that need it are refused` }));
}

/**
 * Background removal and text segmentation, one line each: what their graphs lack (files, node classes), or
 * that they can run. Optional: the models render without them; only `/rembg` or `/sam/sam-predict` is refused.
 */
export function segmentationLines(needs: readonly SegmentationNeeds[]): ContractResult[] {
  return needs.flatMap((n): ContractResult[] => {
    const lacks = [
      ...n.missingFiles.map((f) => ({ name: `model file ${f.file} for ${n.use} is missing`, detail: `not in ${f.where}; such requests are refused` })),
      ...n.missingNodes.map((c) => ({ name: `node class ${c} for ${n.use} is not installed`, detail: 'such requests are refused' })),
    ];
    if (lacks.length === 0) return [{ name: `${n.use}: every node class and model file its graphs use is installed`, ok: true }];
    return lacks.map((l) => ({ ...l, ok: false, optional: true }));
  });
}
