/**
 * The sglang engine: SGLang's ComfyUI plugin (ComfyUI_SGLDiffusion) in integrated mode. `SGLDOptions` (the
 * model's runtime options) feeds `SGLDUNETLoader`, which starts an SGLang worker for the DiT; ComfyUI keeps
 * the text encoders, the VAE and the sampler loop, so the rest of the graph is the same. LoRAs go through
 * `SGLDLoraLoader`. A model runs on it when its profile has a `sglang` block (spec.ts): the files the
 * worker loads (safetensors checkpoints, replacing the same roles of `files`) and its SGLDOptions.
 */
import type { CustomNodePackage } from '../../../comfyui/plugins.ts';
import type { NodeLink } from '../../../comfyui/graph.ts';
import { comboOptions, inputSpec, type ObjectInfo } from '../../../comfyui/object-info.ts';
import type { LoraUse } from '../../../contracts/render.ts';
import type { ModelProfile } from '../../profile.ts';
import type { FileNeed, ModelEngine, NodeAdder } from '../model-engine.ts';
import { sglangOverrides } from './overrides.ts';

const SGLD_LOADER = 'SGLDUNETLoader';
/** The integrated-mode nodes this engine's graphs use. */
const SGLD_NODES = [SGLD_LOADER, 'SGLDOptions', 'SGLDLoraLoader'];

/** Errors the plugin's loader (SGLDUNETLoader) raises while starting the worker, each with what to change. */
const SGLD_LOADER_ERRORS: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /GGUF transformer needs a MiniMax-H3 BF16|Cannot detect architecture from GGUF/i,
    'the sglang engine loads a .gguf only for MiniMax-H3, beside its BF16 companion (minimax_h3_fl2va_bf16.safetensors or ' +
      'minimax_h3_ref2va_bf16.safetensors in models/diffusion_models); for Flux and Qwen configure the safetensors checkpoint',
  ],
  [/weight_dtype must be 'default'/i, "the plugin accepts only weight_dtype 'default'; choose quantization in SGLDOptions"],
  [
    /SGLang diffusion runtime failed to import|No module named 'sglang/i,
    "the `sglang` package is not importable in ComfyUI's Python: install sglang[diffusion] there",
  ],
  [/Unsupported model type/i, 'the checkpoint is not of a family the plugin has an executor for (Flux, Qwen-Image(-Edit), Z-Image, MiniMax-H3)'],
  [
    /dp_size > 1|num_gpus \(\d+\) must equal|attention_backend|not an SGLang attention backend/i,
    "the model's SGLang runtime options (SGLDOptions) cannot run on this machine",
  ],
];

export const SGLD_PLUGIN: CustomNodePackage = {
  name: 'ComfyUI_SGLDiffusion',
  source: "SGLang's ComfyUI plugin, sgl-project/sglang python/sglang/multimodal_gen/apps/ComfyUI_SGLDiffusion",
  likelyCause:
    "the plugin is not in ComfyUI's custom_nodes, or it failed to import: it imports the `sglang` package when ComfyUI " +
    "loads it, so without `pip install sglang[diffusion]` in ComfyUI's Python the start-up log says IMPORT FAILED " +
    'for it and ComfyUI runs without its nodes',
  // Every class of SGLang's plugin starts with SGLD (SGLDUNETLoader, SGLDOptions, SGLDiffusionGenerateImage, ...).
  hasNode: (classType) => classType.startsWith('SGLD'),
  failureHints: SGLD_LOADER_ERRORS,
};

/** The model files of this engine: the `sglang` block's files replace the roles it names. */
function files(profile: ModelProfile): Readonly<Record<string, string>> {
  return profile.sglang ? { ...profile.files, ...profile.sglang.files } : profile.files;
}

/**
 * The plugin's loader refuses any `weight_dtype` but `default` (quantization is an SGLDOptions setting), and a
 * `.gguf` file is handed to the worker as its transformer weights while the architecture is read from the
 * BF16 companion beside it.
 */
function loadUnet(g: NodeAdder, profile: ModelProfile, file: string): NodeLink {
  if (!profile.sglang) throw new Error(`model ${profile.id} has no sglang engine`);
  const options = g.add('sgld_options', 'SGLDOptions', 'SGLD options', { ...profile.sglang.options });
  return g.add('unet', 'SGLDUNETLoader', 'Load diffusion model (SGLD)', { unet_name: file, weight_dtype: 'default', sgld_options: options });
}

/**
 * SGLDLoraLoader hands the file to the SGLang worker, which patches the DiT only (the text encoder runs in
 * ComfyUI unpatched). The plugin node returns its input model and sets the worker's LoRA set to the ones on
 * that model, so a second node in a chain replaces the first: one LoRA per graph is what this engine can
 * render faithfully, and more is refused rather than silently dropped.
 */
function applyLoras(g: NodeAdder, profile: ModelProfile, loras: readonly LoraUse[], model: NodeLink, clip: NodeLink): { model: NodeLink; clip: NodeLink } {
  if (loras.length > 1) {
    throw new Error(`model ${profile.id} runs on the sglang engine, which applies one LoRA per image; got ${loras.length}`);
  }
  const lora = loras[0];
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
 * Files the profile needs that this ComfyUI lacks, beyond what its graphs' loaders report: the unet roles
 * when the plugin's loader is absent (its list is then unknown), and the companions always.
 */
function fileNeeds(profile: ModelProfile, info: ObjectInfo): FileNeed[] {
  const spec = profile.sglang;
  if (!spec) return [];
  const dm = diffusionModels(info);
  const out: FileNeed[] = [];
  const engineFiles = files(profile);
  if (!Object.hasOwn(info, SGLD_LOADER)) {
    for (const role of Object.keys(spec.files)) {
      const file = engineFiles[role];
      if (file && !dm.files.has(file)) out.push({ file, where: dm.where });
    }
  }
  for (const [role, companion] of Object.entries(spec.companions ?? {})) {
    const of = engineFiles[role];
    if (!dm.files.has(companion)) out.push({ file: companion, where: `${dm.where} (the BF16 companion of ${of ?? role}, read for architecture detection)` });
  }
  return out;
}

const sglangEngine: ModelEngine = {
  id: 'sglang',
  cannotRun: (profile) => (profile.sglang ? undefined : "SGLang's ComfyUI plugin has no executor for its family"),
  files,
  loadUnet,
  applyLoras,
  overrides: sglangOverrides,
  contract: { plugin: { package: SGLD_PLUGIN, nodes: SGLD_NODES }, fileNeeds },
  plugins: [SGLD_PLUGIN],
};

export default sglangEngine;
