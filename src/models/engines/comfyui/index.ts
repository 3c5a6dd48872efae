/**
 * The default engine: ComfyUI's own loaders. UnetLoaderGGUF (city96's ComfyUI-GGUF) for a `.gguf` diffusion
 * model, core UNETLoader otherwise; LoraLoader patches the model and the text encoder. It runs every model,
 * has no section in the overrides file, and needs nothing of a ComfyUI beyond what its graphs' loaders show.
 */
import type { CustomNodePackage } from '../../../comfyui/plugins.ts';
import type { NodeLink } from '../../../comfyui/graph.ts';
import type { LoraUse } from '../../../contracts/render.ts';
import type { ModelProfile } from '../../profile.ts';
import { isGguf, type ModelEngine, type NodeAdder } from '../model-engine.ts';

/** ComfyUI-GGUF: the GGUF diffusion-model loader, and the GGUF text-encoder loaders the families use. */
export const GGUF_PLUGIN: CustomNodePackage = {
  name: 'ComfyUI-GGUF',
  source: 'city96/ComfyUI-GGUF',
  likelyCause: "it is not in ComfyUI's custom_nodes, or its `gguf` Python package is missing",
  hasNode: (classType) => GGUF_NODES.has(classType),
};

const GGUF_NODES = new Set([
  'UnetLoaderGGUF',
  'DualCLIPLoaderGGUF',
  'CLIPLoaderGGUF',
  'TripleCLIPLoaderGGUF',
  'QuadrupleCLIPLoaderGGUF',
  'UnetLoaderGGUFAdvanced',
]);

function loadUnet(g: NodeAdder, _profile: ModelProfile, file: string): NodeLink {
  // GGUF needs ComfyUI-GGUF's loader: choosing by extension lets an operator swap a GGUF for a safetensors
  // file through the overrides file alone.
  return isGguf(file)
    ? g.add('unet', 'UnetLoaderGGUF', 'Load diffusion model (GGUF)', { unet_name: file })
    : g.add('unet', 'UNETLoader', 'Load diffusion model', { unet_name: file, weight_dtype: 'default' });
}

/** LoraLoader per LoRA, each patching the model and the text encoder the one before it returned. */
function applyLoras(g: NodeAdder, _profile: ModelProfile, loras: readonly LoraUse[], model: NodeLink, clip: NodeLink): { model: NodeLink; clip: NodeLink } {
  let m = model;
  let c = clip;
  loras.forEach((lora, i) => {
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

const comfyuiEngine: ModelEngine = {
  id: 'comfyui',
  cannotRun: () => undefined,
  files: (profile) => profile.files,
  loadUnet,
  applyLoras,
  contract: { fileNeeds: () => [] },
  plugins: [GGUF_PLUGIN],
};

export default comfyuiEngine;
