/**
 * `/system_stats` and `/models` as a real ComfyUI 0.33.0 answers them (shapes from the recording): package
 * versions as a list of `{name, installed, required}`, a device list whose `index` is null on CPU, and the
 * model folder names of `folder_paths` (files listed from the loader combos of `/object_info`).
 */
import os from 'node:os';
import type { RawObjectInfo } from './node-schema.ts';
import { isObject } from './node-schema.ts';

export const COMFYUI_VERSION = '0.33.0';

export function systemStats(): Record<string, unknown> {
  const total = os.totalmem();
  const free = os.freemem();
  const pkg = (name: string, v: string) => ({ name, installed: v, required: v });
  return {
    system: {
      os: 'linux',
      ram_total: total,
      ram_free: free,
      comfyui_version: COMFYUI_VERSION,
      required_frontend_version: '1.49.6',
      installed_templates_version: '0.11.44',
      required_templates_version: '0.11.44',
      comfy_package_versions: [
        pkg('comfyui-frontend-package', '1.49.6'),
        pkg('comfyui-workflow-templates', '0.11.44'),
        pkg('comfyui-embedded-docs', '0.5.10'),
        pkg('comfy-kitchen', '0.2.31'),
        pkg('comfy-aimdo', '0.4.13'),
      ],
      python_version: '3.12.1 (fake-comfyui)',
      pytorch_version: '2.15.0+cpu',
      embedded_python: false,
      deploy_environment: 'local-git',
      argv: ['main.py', '--cpu', '--fake-comfyui'],
    },
    devices: [{ name: 'cpu', type: 'cpu', index: null, vram_total: total, vram_free: free, torch_vram_total: total, torch_vram_free: free }],
  };
}

/** `folder_names_and_paths` keys of the recorded server (core folders plus ComfyUI-GGUF's two). */
const FOLDERS = [
  'checkpoints',
  'configs',
  'loras',
  'vae',
  'text_encoders',
  'diffusion_models',
  'clip_vision',
  'style_models',
  'embeddings',
  'diffusers',
  'vae_approx',
  'controlnet',
  'gligen',
  'upscale_models',
  'latent_upscale_models',
  'custom_nodes',
  'datasets',
  'hypernetworks',
  'photomaker',
  'classifiers',
  'model_patches',
  'audio_encoders',
  'background_removal',
  'frame_interpolation',
  'geometry_estimation',
  'optical_flow',
  'detection',
  'unet_gguf',
  'clip_gguf',
];

/** Loader inputs whose combo lists a folder's files. */
const LOADERS: Record<string, Array<[node: string, input: string]>> = {
  checkpoints: [['CheckpointLoaderSimple', 'ckpt_name']],
  loras: [
    ['LoraLoaderModelOnly', 'lora_name'],
    ['LoraLoader', 'lora_name'],
  ],
  vae: [['VAELoader', 'vae_name']],
  text_encoders: [
    ['CLIPLoader', 'clip_name'],
    ['DualCLIPLoader', 'clip_name1'],
  ],
  diffusion_models: [['UNETLoader', 'unet_name']],
  clip_vision: [['CLIPVisionLoader', 'clip_name']],
  upscale_models: [['UpscaleModelLoader', 'model_name']],
  unet_gguf: [['UnetLoaderGGUF', 'unet_name']],
  clip_gguf: [['CLIPLoaderGGUF', 'clip_name']],
};

/** Not files: VAELoader also offers these built-in choices. */
const PSEUDO_FILES = new Set(['pixel_space', 'taesd', 'taesdxl', 'taesd3', 'taef1']);

export function modelFolders(info: RawObjectInfo): Record<string, string[]> {
  const combo = (node: string, input: string): string[] => {
    const spec = info[node]?.input?.required?.[input];
    if (!Array.isArray(spec)) return [];
    const head: unknown = spec[0];
    const opts = isObject(spec[1]) ? spec[1] : {};
    const list = Array.isArray(head) ? head : head === 'COMBO' && Array.isArray(opts.options) ? opts.options : [];
    return list.map(String);
  };
  const out: Record<string, string[]> = {};
  for (const f of FOLDERS) {
    const files = new Set((LOADERS[f] ?? []).flatMap(([node, input]) => combo(node, input)));
    out[f] = [...files].filter((x) => !PSEUDO_FILES.has(x)).sort();
  }
  return out;
}
