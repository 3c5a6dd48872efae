/**
 * What `comfy-durable contract` adds for models configured with the sglang engine: whether SGLang's ComfyUI
 * plugin is there at all, and the files its loader needs. The graph checks (contract-profiles.ts) see the
 * missing SGLD node classes; these see what they cannot:
 * - the plugin itself, one line, when none of its loader nodes is installed (absent, or it failed to import);
 * - the unet files even without the plugin, in models/diffusion_models as ComfyUI's own loaders list it
 *   (the plugin lists the same folder, `.gguf` included);
 * - the BF16 companion the plugin needs beside an H3 GGUF (the graph does not name it).
 */
import type { ContractResult } from '../comfyui/contract.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { comboOptions, inputSpec } from '../comfyui/object-info.ts';
import { SGLD_PLUGIN } from '../comfyui/plugins.ts';
import { engineFiles, engineOf } from '../models/families/engine.ts';
import type { ModelProfile } from '../models/profile.ts';

const SGLD_LOADER = 'SGLDUNETLoader';
/** The integrated-mode nodes the sglang engine's graphs use. */
const SGLD_NODES = [SGLD_LOADER, 'SGLDOptions', 'SGLDLoraLoader'];

const onSglang = (p: ModelProfile): boolean => engineOf(p) === 'sglang' && p.sglang !== undefined;

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
