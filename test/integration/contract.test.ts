/**
 * The ComfyUI contract checks (`comfy-durable contract <url>`) against the fake: the same checks an operator
 * runs against a real ComfyUI must hold for the fake our other tests trust (it serves the recorded real
 * `/object_info`).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAllContractChecks } from '../../src/cli/contract.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { listProfiles } from '../../src/models/registry.ts';

const run = promisify(execFile);
let fake: FakeComfyUI;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0 });
});
afterAll(async () => {
  await fake?.close();
});

describe('contract checks', () => {
  it('all pass against the fake ComfyUI', async () => {
    const results = await runAllContractChecks(fake.url);
    expect(results.length).toBeGreaterThanOrEqual(12);
    expect(results.filter((r) => !r.ok)).toEqual([]);
  });

  it('name, one line each, the custom node and the model file a ComfyUI lacks', async () => {
    // A ComfyUI without ComfyUI-GGUF's unet loader and without the Flux VAE file.
    const { loadObjectInfoFixture } = await import('../../tools/fake-comfyui/fixture.ts');
    const info = loadObjectInfoFixture();
    delete info.UnetLoaderGGUF;
    const vae = info.VAELoader!.input.required!.vae_name!;
    vae[0] = (vae[0] as string[]).filter((f) => f !== 'ae.safetensors');
    const bare = await startFakeComfyUI({ port: 0, objectInfo: info });
    try {
      const failed = (await runAllContractChecks(bare.url)).filter((r) => !r.ok);
      expect(failed.map((r) => r.name)).toEqual([
        'node class UnetLoaderGGUF is not installed (custom node city96/ComfyUI-GGUF)',
        'model file ae.safetensors is missing',
      ]);
      // The registered profiles whose graphs use a GGUF unet, and those that name the Flux VAE.
      const gguf = listProfiles()
        .filter((p) => p.files.unet?.endsWith('.gguf'))
        .map((p) => p.id);
      const fluxVae = listProfiles()
        .filter((p) => Object.values(p.files).includes('ae.safetensors'))
        .map((p) => p.id);
      expect(gguf).toContain('imagegen-flux-dev');
      expect(fluxVae).toContain('imagegen-flux-dev');
      expect(failed[0]!.detail).toBe(`needed by ${gguf.join(', ')}`);
      expect(failed[1]!.detail).toBe(`not in VAELoader.vae_name; needed by ${fluxVae.join(', ')}`);
    } finally {
      await bare.close();
    }
  });

  it('with every model it can run on the sglang engine: the fake passes with its plugin on, and names the plugin without it', async () => {
    const { applyModelOverrides, resetModelOverrides } = await import('../../src/models/registry.ts');
    const ids = ['imagegen-flux-dev', 'imagegen-flux-schnell', 'imagegen-qwen-image', 'imagegen-qwen-image-edit', 'videogen-minimax-h3'];
    applyModelOverrides(Object.fromEntries(ids.map((id) => [id, { engine: 'sglang' }])));
    const withPlugin = await startFakeComfyUI({ port: 0, sgldPlugin: true });
    try {
      expect((await runAllContractChecks(withPlugin.url)).filter((r) => !r.ok)).toEqual([]);
      const failed = (await runAllContractChecks(fake.url)).filter((r) => !r.ok);
      expect(failed[0]!.name).toMatch(/^custom node ComfyUI_SGLDiffusion is not installed or failed to import/);
      expect(failed.some((r) => r.name.startsWith('node class SGLDUNETLoader is not installed'))).toBe(true);
    } finally {
      resetModelOverrides();
      await withPlugin.close();
    }
  });

  it('the CLI prints one line per check and exits 0', async () => {
    const root = path.resolve(import.meta.dirname, '..', '..');
    const { stdout } = await run(process.execPath, [
      path.join(root, 'node_modules/tsx/dist/cli.mjs'),
      path.join(root, 'src/cli/main.ts'),
      'contract',
      fake.url,
    ]);
    expect(stdout).toMatch(/^\d+ passed, 0 failed$/m);
    expect(stdout).toContain('ok   a client-chosen prompt id is followed to completion');
  });
});
