/**
 * The engine swap, in one place. Every family builder loads its diffusion model and its LoRAs through these
 * functions; the profile's engine decides which nodes they add:
 * - `comfyui`: UnetLoaderGGUF for a `.gguf` file, core UNETLoader otherwise; LoraLoader (model + text encoder).
 * - `sglang`: SGLang's ComfyUI plugin in integrated mode. `SGLDOptions` (the model's runtime options) feeds
 *   `SGLDUNETLoader`, which starts an SGLang worker for the DiT; ComfyUI keeps the text encoders, the VAE and
 *   the sampler loop, so the rest of the graph is the same. LoRAs go through `SGLDLoraLoader`.
 * Nothing else in a graph depends on the engine: requests, prompt ids, previews and history are unchanged.
 */
import type { InputValue, NodeLink } from '../../comfyui/graph.ts';
import type { LoraUse } from '../../render/types.ts';
import type { Engine, ModelProfile } from '../profile.ts';

/** What the builders hand in (GraphBuilder's shape; named here so this module imports no builder code). */
export interface NodeAdder {
  add(id: string, classType: string, title: string, inputs: Record<string, InputValue>): NodeLink;
}

export function engineOf(profile: ModelProfile): Engine {
  return profile.engine ?? 'comfyui';
}

/** The model files of the profile's engine: the sglang engine replaces the roles it names. */
export function engineFiles(profile: ModelProfile): Readonly<Record<string, string>> {
  return engineOf(profile) === 'sglang' && profile.sglang ? { ...profile.files, ...profile.sglang.files } : profile.files;
}

export function requireFile(profile: ModelProfile, role: string): string {
  const name = engineFiles(profile)[role];
  if (!name) throw new Error(`model ${profile.id}: no file configured for role "${role}"`);
  return name;
}

export const isGguf = (file: string): boolean => file.toLowerCase().endsWith('.gguf');

/**
 * The diffusion model of file role `role` (node id `unet`). On the sglang engine the plugin's loader refuses
 * any `weight_dtype` but `default` (quantization is an SGLDOptions setting), and a `.gguf` file is handed to
 * the worker as its transformer weights while the architecture is read from the BF16 companion beside it.
 */
export function loadUnet(g: NodeAdder, profile: ModelProfile, role = 'unet'): NodeLink {
  const file = requireFile(profile, role);
  if (engineOf(profile) === 'sglang') {
    if (!profile.sglang) throw new Error(`model ${profile.id} has no sglang engine`);
    const options = g.add('sgld_options', 'SGLDOptions', 'SGLD options', { ...profile.sglang.options });
    return g.add('unet', 'SGLDUNETLoader', 'Load diffusion model (SGLD)', { unet_name: file, weight_dtype: 'default', sgld_options: options });
  }
  // GGUF needs ComfyUI-GGUF's loader: choosing by extension lets an operator swap a GGUF for a safetensors
  // file through the overrides file alone.
  return isGguf(file)
    ? g.add('unet', 'UnetLoaderGGUF', 'Load diffusion model (GGUF)', { unet_name: file })
    : g.add('unet', 'UNETLoader', 'Load diffusion model', { unet_name: file, weight_dtype: 'default' });
}

/**
 * `<lora:name:weight>` tags → a chain of LoRA nodes after the loaders, in the prompt's order.
 * - comfyui: LoraLoader patches the model and the text encoder.
 * - sglang: SGLDLoraLoader hands the file to the SGLang worker, which patches the DiT only (the text encoder
 *   runs in ComfyUI unpatched). The plugin node returns its input model and sets the worker's LoRA set to
 *   the ones on that model, so a second node in a chain replaces the first: one LoRA per graph is what
 *   this engine can render faithfully, and more is refused rather than silently dropped.
 */
export function applyLoras(
  g: NodeAdder,
  profile: ModelProfile,
  loras: readonly LoraUse[] | undefined,
  model: NodeLink,
  clip: NodeLink,
): { model: NodeLink; clip: NodeLink } {
  const list = loras ?? [];
  if (engineOf(profile) === 'sglang') {
    if (list.length > 1) {
      throw new Error(`model ${profile.id} runs on the sglang engine, which applies one LoRA per image; got ${list.length}`);
    }
    const lora = list[0];
    if (!lora) return { model, clip };
    const patched = g.add('lora_1', 'SGLDLoraLoader', `LoRA ${lora.name} (SGLD)`, {
      model,
      lora_name: lora.file,
      strength_model: lora.model,
      nickname: lora.name,
      target: 'all',
    });
    return { model: patched, clip };
  }
  let m = model;
  let c = clip;
  list.forEach((lora, i) => {
    const id = `lora_${i + 1}`;
    g.add(id, 'LoraLoader', `LoRA ${lora.name}`, {
      model: m,
      clip: c,
      lora_name: lora.file,
      strength_model: lora.model,
      strength_clip: lora.clip,
    });
    m = [id, 0];
    c = [id, 1];
  });
  return { model: m, clip: c };
}
