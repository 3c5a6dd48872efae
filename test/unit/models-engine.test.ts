/**
 * The engine setting of MODELS_CONFIG: validated at start against what SGLang's plugin accepts, merged per
 * model, and absent = every graph exactly as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { applyModelOverrides, getProfile, parseModelOverrides, resetModelOverrides } from '../../src/models/registry.ts';

afterEach(() => resetModelOverrides());

const bad = (json: unknown) => () => parseModelOverrides(json, 'models.json');

describe('engine per model', () => {
  it("defaults to comfyui; the profile keeps both engines' files apart", () => {
    const flux = getProfile('imagegen-flux-dev')!;
    expect(flux.engine ?? 'comfyui').toBe('comfyui');
    expect(flux.files.unet).toBe('flux1-dev-Q8_0.gguf');
    expect(flux.sglang?.files.unet).toBe('flux1-dev.safetensors');
    expect(getProfile('videogen-minimax-h3')!.sglang?.companions).toEqual({
      unet: 'minimax_h3_fl2va_bf16.safetensors',
      unetRef2va: 'minimax_h3_ref2va_bf16.safetensors',
    });
    expect(getProfile('imagegen-flux-kontext')!.sglang).toBeUndefined();
    expect(getProfile('videogen-wan22-5b')!.sglang).toBeUndefined();
  });

  it('merges engine, files and options per model', () => {
    applyModelOverrides({
      'imagegen-qwen-image': { engine: 'sglang', sglang: { files: { unet: 'qwen-image-fp8.safetensors' }, options: { enable_torch_compile: true } } },
    });
    const q = getProfile('imagegen-qwen-image')!;
    expect(q.engine).toBe('sglang');
    expect(q.sglang).toEqual({ files: { unet: 'qwen-image-fp8.safetensors' }, options: { model_type: 'qwen_image', enable_torch_compile: true } });
    expect(q.files.unet).toBe('qwen-image-Q8_0.gguf');
    expect(getProfile('imagegen-flux-dev')!.engine).toBeUndefined();
  });

  it('refuses what the plugin would refuse, naming the setting', () => {
    expect(bad({ 'imagegen-flux-kontext': { engine: 'sglang' } })).toThrow('models.json: imagegen-flux-kontext: this model cannot run on the sglang engine');
    expect(bad({ 'videogen-wan22-5b': { sglang: { options: { num_gpus: 2 } } } })).toThrow(/videogen-wan22-5b: this model cannot run on the sglang engine/);
    expect(bad({ 'imagegen-flux-dev': { engine: 'sglang', sglang: { files: { unet: 'flux1-dev-Q4_K_S.gguf' } } } })).toThrow(
      'models.json: imagegen-flux-dev.sglang.files.unet: "flux1-dev-Q4_K_S.gguf" is a GGUF; the sglang engine loads this model only from its safetensors checkpoint',
    );
    expect(bad({ 'imagegen-flux-dev': { sglang: { files: { t5x: 'a.safetensors' } } } })).toThrow(/sglang\.files\.t5x: unknown file role/);
    expect(bad({ 'imagegen-flux-dev': { sglang: { options: { dp_size: 2 } } } })).toThrow(/imagegen-flux-dev\.sglang\.options\.dp_size/);
    expect(bad({ 'imagegen-flux-dev': { sglang: { options: { num_gpus: 4, tp_size: 1, sp_degree: 2 } } } })).toThrow(
      'models.json: imagegen-flux-dev.sglang.options: num_gpus (4) must equal tp_size * sp_degree = 2',
    );
    expect(bad({ 'imagegen-flux-dev': { sglang: { options: { num_gpus: 4, tp_size: 1, sp_degree: 2, enable_cfg_parallel: true } } } })).not.toThrow();
    expect(bad({ 'imagegen-flux-dev': { sglang: { options: { gpus: 2 } } } })).toThrow(/sglang\.options/);
    expect(bad({ 'imagegen-flux-dev': { engine: 'vllm' } })).toThrow(/imagegen-flux-dev\.engine/);
  });

  it('an H3 GGUF is fine: the plugin reads its architecture from the BF16 companion', () => {
    expect(bad({ 'videogen-minimax-h3': { engine: 'sglang', sglang: { files: { unet: 'minimax_h3_fl2va-Q4_K_M.gguf' } } } })).not.toThrow();
  });
});
