/**
 * What `comfy-durable contract` adds for models configured with the sglang engine: whether SGLang's ComfyUI
 * plugin is there at all, one line when none of its loader nodes is installed (absent, or it failed to
 * import). The files its loader needs (the unet files even without the plugin, the BF16 companion beside an
 * H3 GGUF) are found with the graphs' needs (src/models/availability.ts).
 */
import type { ContractResult } from '../comfyui/contract.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { SGLD_PLUGIN } from '../comfyui/plugins.ts';
import { SGLD_NODES, onSglang } from '../models/availability.ts';
import type { ModelProfile } from '../models/profile.ts';

/** One line when sglang-engine models exist and none of the plugin's nodes is installed. */
export function pluginCheck(profiles: readonly ModelProfile[], info: ObjectInfo): ContractResult[] {
  const users = profiles.filter(onSglang).map((p) => p.id);
  if (users.length === 0 || SGLD_NODES.some((n) => Object.hasOwn(info, n))) return [];
  return [
    {
      name: `custom node ${SGLD_PLUGIN.name} is not installed or failed to import (${SGLD_PLUGIN.source})`,
      ok: false,
      detail: `likely cause: ${SGLD_PLUGIN.likelyCause}; needed by ${users.join(', ')} (engine sglang)`,
    },
  ];
}
