/**
 * Custom-node packages the client can explain when their nodes are missing or their loaders fail, so an
 * operator reads what to install or fix instead of a validation dump. Keyed by node class: the client knows
 * node classes, not model profiles.
 */

export interface CustomNodePackage {
  /** Folder name under ComfyUI's custom_nodes. */
  name: string;
  /** Where it comes from. */
  source: string;
  /** Why its nodes are most likely absent. */
  likelyCause: string;
}

export const SGLD_PLUGIN: CustomNodePackage = {
  name: 'ComfyUI_SGLDiffusion',
  source: "SGLang's ComfyUI plugin, sgl-project/sglang python/sglang/multimodal_gen/apps/ComfyUI_SGLDiffusion",
  likelyCause:
    "the plugin is not in ComfyUI's custom_nodes, or it failed to import: it imports the `sglang` package when ComfyUI " +
    "loads it, so without `pip install sglang[diffusion]` in ComfyUI's Python the start-up log says IMPORT FAILED " +
    'for it and ComfyUI runs without its nodes',
};

export const GGUF_PLUGIN: CustomNodePackage = {
  name: 'ComfyUI-GGUF',
  source: 'city96/ComfyUI-GGUF',
  likelyCause: "it is not in ComfyUI's custom_nodes, or its `gguf` Python package is missing",
};

const GGUF_NODES = new Set([
  'UnetLoaderGGUF',
  'DualCLIPLoaderGGUF',
  'CLIPLoaderGGUF',
  'TripleCLIPLoaderGGUF',
  'QuadrupleCLIPLoaderGGUF',
  'UnetLoaderGGUFAdvanced',
]);

/** The package a node class comes from, when it is one the client knows. */
export function packageOfNode(classType: string | null | undefined): CustomNodePackage | undefined {
  if (!classType) return undefined;
  // Every class of SGLang's plugin starts with SGLD (SGLDUNETLoader, SGLDOptions, SGLDiffusionGenerateImage, ...).
  if (classType.startsWith('SGLD')) return SGLD_PLUGIN;
  if (GGUF_NODES.has(classType)) return GGUF_PLUGIN;
  return undefined;
}

/** "it comes from X (source); likely cause: ..." for a missing node of a known package, else undefined. */
export function missingNodeExplanation(classType: string | null | undefined): string | undefined {
  const pkg = packageOfNode(classType);
  return pkg ? `it comes from custom node ${pkg.name} (${pkg.source}); likely cause: ${pkg.likelyCause}` : undefined;
}

/**
 * Errors SGLang's plugin raises in its loader (SGLDUNETLoader) while starting the worker, each with what the
 * operator must change. All are deterministic for the same graph and files: retrying cannot help.
 */
const SGLD_LOADER_ERRORS: ReadonlyArray<[RegExp, string]> = [
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

/** What to do about an exception of a node of a known package, or undefined when nothing specific is known. */
export function executionHint(nodeType: string | undefined, exceptionMessage: string): string | undefined {
  if (packageOfNode(nodeType) !== SGLD_PLUGIN) return undefined;
  for (const [pattern, hint] of SGLD_LOADER_ERRORS) {
    if (pattern.test(exceptionMessage)) return `${SGLD_PLUGIN.name}: ${hint}`;
  }
  return undefined;
}
