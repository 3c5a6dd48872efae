/**
 * What the sglang engine needs to know of a model, in its profile's `sglang` block (absent: the model cannot
 * run on that engine). Types only: the profile declares its field with them.
 */

/**
 * The `SGLDOptions` inputs the service sets (names and meanings are the plugin's). Unset ones keep the
 * plugin's defaults. `model_type` picks the SGLang pipeline; left on auto-detect the plugin cannot tell
 * Qwen-Image from Qwen-Image-Edit (same architecture), so each family names its own.
 */
export interface SglangOptions {
  model_type?: 'auto-detect' | 'qwen_image' | 'qwen_image_edit' | 'flux' | 'lumina2' | 'minimax_h3';
  enable_torch_compile?: boolean;
  num_gpus?: number;
  tp_size?: number;
  sp_degree?: number;
  ulysses_degree?: number;
  ring_degree?: number;
  dp_size?: number;
  enable_cfg_parallel?: boolean;
  attention_backend?: string;
  dit_layerwise_offload?: boolean;
  enable_cache_dit?: boolean;
  quantization?: string;
  transformer_weights_path?: string;
}

export interface SglangEngineSpec {
  /**
   * Model files by role for the sglang engine; they replace the same roles of `files` when the engine is
   * `sglang` (the default engine's GGUF files stay what `files` says). The plugin's worker loads
   * safetensors checkpoints: a Flux or Qwen GGUF cannot run on it.
   */
  files: Readonly<Record<string, string>>;
  /**
   * Files the graph does not name but the plugin needs beside a unet role's file in
   * `models/diffusion_models` (the H3 GGUF's BF16 companion, from which it detects the architecture).
   */
  companions?: Readonly<Record<string, string>>;
  /** `SGLDOptions` for this model. */
  options: Readonly<SglangOptions>;
}
