/**
 * `comfy-durable contract` for models on the sglang engine (src/cli/contract-engines.ts): one line for a
 * missing plugin, one per missing node class, one per missing file (the safetensors checkpoints for Flux and
 * Qwen, the H3 GGUFs and their BF16 companions), read from `/object_info` as the fake serves it with and
 * without the plugin's recorded node classes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { profileChecks } from '../../src/cli/contract-profiles.ts';
import { objectInfoSchema, type ObjectInfo } from '../../src/comfyui/object-info.ts';
import { loadRawObjectInfo, withProfileFiles } from '../../tools/fake-comfyui/fixture.ts';
import { withSgldPlugin } from '../../tools/fake-comfyui/sgld-plugin.ts';
import { applyModelOverrides, listProfiles, resetModelOverrides } from '../../src/models/registry.ts';

/** The recorded fixture as the fake serves it: every registered profile's files in the loader lists. */
const base = withProfileFiles(loadRawObjectInfo());

const SGLANG = ['imagegen-flux-dev', 'imagegen-flux-schnell', 'imagegen-qwen-image', 'imagegen-qwen-image-edit', 'videogen-minimax-h3'];
const allOnSglang = () => applyModelOverrides(Object.fromEntries(SGLANG.map((id) => [id, { engine: 'sglang' }])));
const failed = (info: ObjectInfo) => profileChecks(listProfiles(), info).filter((r) => !r.ok);

afterEach(() => resetModelOverrides());

describe('contract, sglang engine', () => {
  it('without the plugin: one line for the plugin, one per SGLD node, one per file the engine needs', () => {
    allOnSglang();
    const lines = failed(objectInfoSchema.parse(structuredClone(base)));
    expect(lines.map((r) => r.name)).toEqual([
      "custom node ComfyUI_SGLDiffusion is not installed or failed to import (SGLang's ComfyUI plugin, sgl-project/sglang python/sglang/multimodal_gen/apps/ComfyUI_SGLDiffusion)",
      "node class SGLDOptions is not installed (custom node SGLang's ComfyUI plugin, sgl-project/sglang python/sglang/multimodal_gen/apps/ComfyUI_SGLDiffusion)",
      "node class SGLDUNETLoader is not installed (custom node SGLang's ComfyUI plugin, sgl-project/sglang python/sglang/multimodal_gen/apps/ComfyUI_SGLDiffusion)",
      'model file flux1-dev.safetensors is missing',
      'model file flux1-schnell.safetensors is missing',
      'model file minimax_h3_fl2va_bf16.safetensors is missing',
      'model file minimax_h3_fl2va-Q8_0.gguf is missing',
      'model file minimax_h3_ref2va_bf16.safetensors is missing',
      'model file minimax_h3_ref2va-Q8_0.gguf is missing',
      'model file qwen_image_bf16.safetensors is missing',
      'model file qwen_image_edit_2509_bf16.safetensors is missing',
    ]);
    expect(lines[0]!.detail).toMatch(
      /IMPORT FAILED.*needed by imagegen-flux-dev, imagegen-flux-schnell, imagegen-qwen-image, imagegen-qwen-image-edit, videogen-minimax-h3 \(engine sglang\)/,
    );
    expect(lines.find((r) => r.name.includes('flux1-dev.safetensors'))!.detail).toBe(
      'not in models/diffusion_models (UNETLoader, UnetLoaderGGUF); needed by imagegen-flux-dev',
    );
    expect(lines.find((r) => r.name.includes('minimax_h3_fl2va_bf16'))!.detail).toMatch(
      /BF16 companion of minimax_h3_fl2va-Q8_0.gguf.*needed by videogen-minimax-h3$/,
    );
  });

  it('with the plugin and the files: every sglang model passes; a missing companion is one line', () => {
    allOnSglang();
    const raw = withSgldPlugin(structuredClone(base));
    expect(failed(objectInfoSchema.parse(raw))).toEqual([]);
    const ok = profileChecks(listProfiles(), objectInfoSchema.parse(raw))
      .filter((r) => r.ok)
      .map((r) => r.name.split(':')[0]);
    expect(ok).toEqual(expect.arrayContaining(SGLANG.map((id) => `${id} (engine sglang)`)));

    const unets = raw.SGLDUNETLoader!.input!.required!.unet_name![0] as string[];
    raw.SGLDUNETLoader!.input!.required!.unet_name = [unets.filter((f) => f !== 'minimax_h3_ref2va_bf16.safetensors' && f !== 'qwen_image_bf16.safetensors')];
    const lines = failed(objectInfoSchema.parse(raw));
    expect(lines.map((r) => [r.name, r.detail])).toEqual([
      [
        'model file minimax_h3_ref2va_bf16.safetensors is missing',
        expect.stringMatching(/^not in SGLDUNETLoader\.unet_name \(the BF16 companion of minimax_h3_ref2va-Q8_0\.gguf/),
      ],
      ['model file qwen_image_bf16.safetensors is missing', 'not in SGLDUNETLoader.unet_name; needed by imagegen-qwen-image'],
    ]);
  });

  it('models left on the default engine need nothing from the plugin', () => {
    expect(failed(objectInfoSchema.parse(structuredClone(base)))).toEqual([]);
  });
});
