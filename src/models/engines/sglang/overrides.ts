/**
 * The sglang engine's section of the model overrides file (`MODELS_CONFIG`): `sglang.files` / `sglang.options`
 * adjust what the engine loads and how its worker runs (the profile's `engine` chooses it). Checked at start
 * against what SGLang's ComfyUI plugin accepts, so a setting it would refuse on the first render stops the
 * service instead. Pure.
 */
import { z } from 'zod';
import type { ModelProfile } from '../../profile.ts';
import type { EngineOverrides } from '../model-engine.ts';
import type { SglangEngineSpec } from './spec.ts';

const degree = z.number().int().min(-1);

/** `SGLDOptions` inputs (the plugin's names; -1 = let SGLang derive the degree from `num_gpus`). */
export const sglangOptionsSchema = z.strictObject({
  model_type: z.enum(['auto-detect', 'qwen_image', 'qwen_image_edit', 'flux', 'lumina2', 'minimax_h3']).optional(),
  enable_torch_compile: z.boolean().optional(),
  num_gpus: z.number().int().min(1).optional(),
  tp_size: degree.optional(),
  sp_degree: degree.optional(),
  ulysses_degree: degree.optional(),
  ring_degree: degree.optional(),
  // The plugin refuses dp_size > 1 in integrated mode: ComfyUI runs one prompt at a time.
  dp_size: z.literal(1).optional(),
  enable_cfg_parallel: z.boolean().optional(),
  attention_backend: z.string().optional(),
  dit_layerwise_offload: z.boolean().optional(),
  enable_cache_dit: z.boolean().optional(),
  quantization: z.string().optional(),
  transformer_weights_path: z.string().optional(),
});

const sectionSchema = z.strictObject({
  files: z.record(z.string(), z.string().min(1)).optional(),
  options: sglangOptionsSchema.optional(),
});

type Section = z.infer<typeof sectionSchema>;

/** The sglang spec of `base` with the override's files and options laid over it. */
function mergeSglang(base: ModelProfile, section: Section | undefined): SglangEngineSpec | undefined {
  if (!base.sglang) return undefined;
  if (!section) return base.sglang;
  return {
    ...base.sglang,
    files: { ...base.sglang.files, ...section.files },
    options: { ...base.sglang.options, ...section.options },
  };
}

/** Throws an Error naming `<source>: <id>.sglang.<path>` for a setting the plugin would refuse (`base` can run on sglang). */
function checkSection(source: string, base: ModelProfile, section: Section, roles: readonly string[]): void {
  const id = base.id;
  const spec = mergeSglang(base, section);
  if (!spec) return;
  for (const [role, file] of Object.entries(section.files ?? {})) {
    if (!roles.includes(role)) throw new Error(`${source}: ${id}.sglang.files.${role}: unknown file role (valid: ${roles.join(', ')})`);
    // The plugin reads a GGUF's architecture from a MiniMax-H3 BF16 companion only: any other GGUF fails to load.
    if (file.toLowerCase().endsWith('.gguf') && !spec.companions?.[role]) {
      throw new Error(`${source}: ${id}.sglang.files.${role}: "${file}" is a GGUF; the sglang engine loads this model only from its safetensors checkpoint`);
    }
  }
  const opt = spec.options;
  const tp = opt.tp_size ?? -1;
  let sp = opt.sp_degree ?? -1;
  if (sp === -1 && (opt.ulysses_degree ?? -1) > 0 && (opt.ring_degree ?? -1) > 0) sp = opt.ulysses_degree! * opt.ring_degree!;
  if (tp > 0 && sp > 0) {
    // As the plugin's own check: a GPU outside the layout gets no process group and its worker hangs at start.
    const cfg = opt.enable_cfg_parallel ? 2 : 1;
    const gpus = opt.num_gpus ?? 1;
    if (tp * sp * cfg !== gpus) {
      throw new Error(
        `${source}: ${id}.sglang.options: num_gpus (${gpus}) must equal tp_size * sp_degree${cfg > 1 ? ' * 2 (cfg parallel)' : ''} = ${tp * sp * cfg}`,
      );
    }
  }
}

export const sglangOverrides: EngineOverrides<Section> = {
  schema: sectionSchema,
  apply: (base, section) => (base.sglang ? { sglang: mergeSglang(base, section) } : {}),
  check: checkSection,
};
