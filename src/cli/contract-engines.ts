/**
 * What `comfy-durable contract` adds for the engines the models run on: one line per engine whose own custom
 * nodes are all absent (the package is not installed or failed to import), naming the package, the likely
 * cause and the models that need it. Which engines have a plugin, and which nodes are its, is the engines'
 * knowledge (src/models/engines); the files an engine needs are found with the graphs' needs
 * (src/models/availability.ts).
 */
import type { ContractResult } from '../comfyui/contract.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { missingEnginePlugins } from '../models/availability.ts';
import type { ModelProfile } from '../models/profile.ts';

/** One line per engine in use whose plugin has none of its nodes installed. */
export function pluginCheck(profiles: readonly ModelProfile[], info: ObjectInfo): ContractResult[] {
  return missingEnginePlugins(profiles, info).map((m) => ({
    name: `custom node ${m.package.name} is not installed or failed to import (${m.package.source})`,
    ok: false,
    detail: `likely cause: ${m.package.likelyCause}; needed by ${m.users.join(', ')} (engine ${m.engine})`,
  }));
}
