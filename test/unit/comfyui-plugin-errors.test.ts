/**
 * Failures of SGLang's ComfyUI plugin reach the caller non-retryable and named: a missing plugin (the
 * recorded `missing_node_type` of a ComfyUI where it failed to import for lack of `sglang`) and the errors
 * its loader raises (GGUF without its BF16 companion, weight_dtype, no sglang runtime). The client knows no
 * package itself: the sglang engine (src/models/engines/sglang) registers its plugin when the engines load.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ComfyExecutionError, ComfyValidationError, type ExecutionErrorInfo } from '../../src/comfyui/errors.ts';
import { packageOfNode, registerCustomNodePackages } from '../../src/comfyui/plugins.ts';
import { comfyErrorBodySchema } from '../../src/comfyui/schemas.ts';
import { engineById } from '../../src/models/engines/index.ts';

/** The recording's answer (a real ComfyUI 0.33.0 with the newest plugin and no sglang package). */
const RECORDED_MISSING = {
  type: 'missing_node_type',
  message: "Node 'Load diffusion model (SGLD)' not found. The custom node may not be installed.",
  details: "Node ID '#unet'",
  extra_info: { node_id: 'unet', class_type: 'SGLDUNETLoader', node_title: 'Load diffusion model (SGLD)' },
};

const exec = (over: Partial<ExecutionErrorInfo>): ExecutionErrorInfo => ({
  promptId: 'p',
  nodeId: 'unet',
  nodeType: 'SGLDUNETLoader',
  exceptionType: 'ValueError',
  exceptionMessage: '',
  traceback: [],
  executed: [],
  isOutOfMemory: false,
  timestamp: undefined,
  ...over,
});

describe('custom-node packages the client explains', () => {
  it('are the ones registered with it: each engine registers its own when the engines load', () => {
    expect(packageOfNode('SGLDUNETLoader')).toBe(engineById('sglang').plugins[0]);
    expect(packageOfNode('UnetLoaderGGUF')).toBe(engineById('comfyui').plugins[0]);
    expect(packageOfNode('SomeNodeOfNoPackage')).toBeUndefined();
    registerCustomNodePackages([
      { name: 'Pkg', source: 'someone/pkg', likelyCause: 'not installed', hasNode: (c) => c === 'SomeNodeOfNoPackage', failureHints: [[/boom/, 'fix it']] },
    ]);
    expect(packageOfNode('SomeNodeOfNoPackage')?.name).toBe('Pkg');
    expect(new ComfyExecutionError(exec({ nodeType: 'SomeNodeOfNoPackage', exceptionMessage: 'boom\n' })).hint).toBe('Pkg: fix it');
  });
});

describe('SGLang plugin failures', () => {
  it('the recorded missing_node_type names the plugin and why it is likely missing, non-retryable', () => {
    const e = new ComfyValidationError({ status: 400, error: comfyErrorBodySchema.parse(RECORDED_MISSING), nodeErrors: {} });
    expect(e.retryable).toBe(false);
    expect(e.message).toContain("(SGLDUNETLoader: it comes from custom node ComfyUI_SGLDiffusion (SGLang's ComfyUI plugin");
    expect(e.message).toMatch(/without `pip install sglang\[diffusion\]` in ComfyUI's Python the start-up log says IMPORT FAILED/);
  });

  it("a missing node of no known package keeps ComfyUI's own words", () => {
    const e = new ComfyValidationError({
      status: 400,
      error: comfyErrorBodySchema.parse({ ...RECORDED_MISSING, extra_info: { node_id: 'x', class_type: 'SomethingElse' } }),
      nodeErrors: {},
    });
    expect(e.message).toBe(
      "ComfyUI rejected the prompt (missing_node_type): Node 'Load diffusion model (SGLD)' not found. The custom node may not be installed.: Node ID '#unet'",
    );
  });

  it("the loader's GGUF companion error is classified with what to change, non-retryable", () => {
    const message =
      "GGUF transformer needs a MiniMax-H3 BF16 safetensors in models/diffusion_models for ComfyUI architecture detect (looked for ['minimax_h3_fl2va_bf16.safetensors', 'minimax_h3_ref2va_bf16.safetensors']). Keep --model-path / unet_name on the BF16 file and pass the GGUF via transformer_weights_path.\n";
    const e = new ComfyExecutionError(exec({ exceptionMessage: message }));
    expect(e.retryable).toBe(false);
    expect(e.type).toBe('ComfyExecution');
    expect(e.hint).toMatch(/^ComfyUI_SGLDiffusion: the sglang engine loads a \.gguf only for MiniMax-H3, beside its BF16 companion/);
    expect(e.message.split('\n')[1]).toBe(e.hint);
    expect(e.details()).toMatchObject({ hint: e.hint, nodeType: 'SGLDUNETLoader' });
  });

  it("weight_dtype and a missing sglang runtime are named too; other nodes' errors get no hint", () => {
    const dtype = new ComfyExecutionError(
      exec({
        exceptionMessage: "SGLDUNETLoader weight_dtype must be 'default': the SGLD worker does not use it; select quantization in SGLDOptions instead\n",
      }),
    );
    expect(dtype.hint).toMatch(/weight_dtype 'default'/);
    const runtime = new ComfyExecutionError(exec({ exceptionType: 'RuntimeError', exceptionMessage: 'SGLang diffusion runtime failed to import\n' }));
    expect(runtime.hint).toMatch(/install sglang\[diffusion\]/);
    expect(
      new ComfyExecutionError(exec({ nodeType: 'VAELoader', exceptionMessage: 'Error while deserializing header: header too small\n' })).hint,
    ).toBeUndefined();
  });

  it('the recording holds that missing_node_type answer', () => {
    const rec = JSON.parse(readFileSync(new URL('../fixtures/real-comfyui/sglang-golden-real.json', import.meta.url), 'utf8')) as Record<
      string,
      Record<string, { response: { error: { type: string } } }>
    >;
    for (const v of Object.values(rec['no-plugin']!)) expect(v.response.error.type).toBe('missing_node_type');
  });
});
