/**
 * SGLang's ComfyUI plugin (`ComfyUI_SGLDiffusion`) in the fake, switched on by `sgldPlugin` (CLI
 * `--sgld-plugin`, env `FAKE_COMFYUI_SGLD_PLUGIN=1`). Off, the fake is a ComfyUI where the plugin is absent or
 * failed to import (without the `sglang` package its newest version does not import at all): a graph with
 * an SGLD node gets ComfyUI's `missing_node_type`. On, `/object_info` gains the plugin's 9 node classes from
 * tools/fake-comfyui/fixtures/sglang-object_info.json, recorded verbatim from a real ComfyUI 0.33.0 with the plugin.
 *
 * Only the file lists are this fake's own, as they are every real server's: the plugin lists
 * `models/diffusion_models` (with `.gguf` files) for `SGLDUNETLoader.unet_name` and `models/loras` for
 * `SGLDLoraLoader.lora_name`. Here they are the fake's UNETLoader + UnetLoaderGGUF lists and LoraLoader's
 * list, plus the model files of the sglang engine's defaults (safetensors checkpoints for Flux and Qwen, the
 * MiniMax-H3 GGUFs and their BF16 companions), so the fake stands in for a machine that has them.
 */
import { readFileSync } from 'node:fs';
import type { InputSpec, RawNodeInfo, RawObjectInfo } from './node-schema.ts';

export const SGLD_FIXTURE_URL = new URL('./fixtures/sglang-object_info.json', import.meta.url);

/** Files the sglang engine's profiles name by default (src/models: each profile's `sglang.files` and companions). */
export const SGLD_ENGINE_MODEL_FILES: readonly string[] = [
  'flux1-dev.safetensors',
  'flux1-schnell.safetensors',
  'qwen_image_bf16.safetensors',
  'qwen_image_edit_2509_bf16.safetensors',
  'minimax_h3_fl2va-Q8_0.gguf',
  'minimax_h3_ref2va-Q8_0.gguf',
  'minimax_h3_fl2va_bf16.safetensors',
  'minimax_h3_ref2va_bf16.safetensors',
];

let recorded: RawObjectInfo | undefined;

/** The plugin's node classes exactly as recorded. Each call returns a fresh copy. */
export function loadRawSgldObjectInfo(): RawObjectInfo {
  recorded ??= JSON.parse(readFileSync(SGLD_FIXTURE_URL, 'utf8')) as RawObjectInfo;
  return structuredClone(recorded);
}

const listOf = (node: RawNodeInfo | undefined, input: string): string[] => {
  const spec = node?.input?.required?.[input];
  return Array.isArray(spec) && Array.isArray(spec[0]) ? (spec[0] as unknown[]).filter((v): v is string => typeof v === 'string') : [];
};

function withList(node: RawNodeInfo, input: string, files: string[]): RawNodeInfo {
  const required = node.input?.required ?? {};
  const spec: InputSpec = required[input] ?? [[]];
  return { ...node, input: { ...node.input, required: { ...required, [input]: [files, ...spec.slice(1)] } } };
}

/** `base` (a whole `/object_info`) with the plugin installed. */
export function withSgldPlugin(base: RawObjectInfo): RawObjectInfo {
  const plugin = loadRawSgldObjectInfo();
  const unets = new Set([...listOf(base.UNETLoader, 'unet_name'), ...listOf(base.UnetLoaderGGUF, 'unet_name'), ...SGLD_ENGINE_MODEL_FILES]);
  const out: RawObjectInfo = { ...base, ...plugin };
  out.SGLDUNETLoader = withList(plugin.SGLDUNETLoader!, 'unet_name', [...unets].sort());
  out.SGLDLoraLoader = withList(plugin.SGLDLoraLoader!, 'lora_name', listOf(base.LoraLoader, 'lora_name'));
  return out;
}

/** `FAKE_COMFYUI_SGLD_PLUGIN=1` (or `true`): start with the plugin installed. */
export function sgldPluginFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.FAKE_COMFYUI_SGLD_PLUGIN?.trim().toLowerCase();
  return v === '1' || v === 'true';
}
