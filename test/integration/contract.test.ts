/**
 * The ComfyUI contract checks (`comfy-durable contract <url>`) against the fake: the same checks an operator
 * runs against a real ComfyUI must hold for the fake our other tests trust (it serves the recorded real
 * `/object_info`).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAllContractChecks } from '../../src/cli/contract.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { listProfiles } from '../../src/models/registry.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..', '..');
/** `comfy-durable contract <url>` as an operator runs it. */
const contractCli = (url: string, env: Record<string, string> = {}) =>
  run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), path.join(root, 'src/cli/main.ts'), 'contract', url], {
    env: { ...process.env, MODELS_CONFIG: '', ...env },
  });
let fake: FakeComfyUI;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0 });
});
afterAll(async () => {
  await fake?.close();
});

describe('contract checks', () => {
  it('all pass against the fake ComfyUI', async () => {
    const { results, unusable, protocolOk } = await runAllContractChecks(fake.url);
    expect(protocolOk).toBe(true);
    expect(unusable).toEqual([]);
    expect(results.length).toBeGreaterThanOrEqual(12);
    expect(results.filter((r) => !r.ok)).toEqual([]);
  });

  it('name, one line each, the custom node and the model file a ComfyUI lacks', async () => {
    // A ComfyUI without ComfyUI-GGUF's unet loader and without the Flux VAE file.
    const { loadObjectInfoWithProfileFiles } = await import('../../tools/fake-comfyui/fixture.ts');
    const info = loadObjectInfoWithProfileFiles();
    delete info.UnetLoaderGGUF;
    const vae = info.VAELoader!.input.required!.vae_name!;
    vae[0] = (vae[0] as string[]).filter((f) => f !== 'ae.safetensors');
    const bare = await startFakeComfyUI({ port: 0, objectInfo: info });
    try {
      const { results } = await runAllContractChecks(bare.url);
      const failed = results.filter((r) => !r.ok && !r.optional);
      // The recorded ComfyUI has only the canny DiffSynth patch: the others are named, as optional (the model renders).
      const optional = results.filter((r) => r.optional && r.name.startsWith('control file'));
      expect(optional.map((r) => r.name)).toContain('control file qwen_image_depth_diffsynth_controlnet.safetensors is missing');
      expect(optional.every((r) => !r.ok && /control units of .* that need it are refused$/.test(r.detail ?? ''))).toBe(true);
      // Background removal and SAM3 (src/models/segmentation.ts): the recording has BiRefNet, no SAM3 checkpoint.
      expect(results.filter((r) => / for (background removal|text segmentation)/.test(r.name))).toEqual([
        {
          name: 'model file sam3.1_multiplex_fp16.safetensors for text segmentation (/sam/sam-predict) is missing',
          ok: false,
          optional: true,
          detail: 'not in CheckpointLoaderSimple.ckpt_name; such requests are refused',
        },
      ]);
      expect(results).toContainEqual({ name: 'background removal (/rembg): every node class and model file its graphs use is installed', ok: true });
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
      expect((await runAllContractChecks(withPlugin.url)).results.filter((r) => !r.ok)).toEqual([]);
      const failed = (await runAllContractChecks(fake.url)).results.filter((r) => !r.ok);
      expect(failed[0]!.name).toMatch(/^custom node ComfyUI_SGLDiffusion is not installed or failed to import/);
      expect(failed.some((r) => r.name.startsWith('node class SGLDUNETLoader is not installed'))).toBe(true);
    } finally {
      resetModelOverrides();
      await withPlugin.close();
    }
  });

  it('the CLI prints one line per check and exits 0', async () => {
    const { stdout } = await contractCli(fake.url);
    expect(stdout).toMatch(/^\d+ passed, 0 failed$/m);
    expect(stdout).toContain('ok   a client-chosen prompt id is followed to completion');
  });

  it("a ComfyUI without one model's file: exit 3 naming that model, the others pass; switched off in MODELS_CONFIG, exit 0", async () => {
    const { loadObjectInfoWithProfileFiles } = await import('../../tools/fake-comfyui/fixture.ts');
    const info = loadObjectInfoWithProfileFiles();
    const unet = info.UnetLoaderGGUF!.input.required!.unet_name!;
    unet[0] = (unet[0] as string[]).filter((f) => f !== 'flux1-krea-dev-Q8_0.gguf');
    const noKrea = await startFakeComfyUI({ port: 0, objectInfo: info });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'contract-models-'));
    try {
      const lacking = await contractCli(noKrea.url).then(
        () => expect.fail('exit 0 with a model file missing'),
        (err: { code: number; stdout: string }) => err,
      );
      expect(lacking.code).toBe(3);
      expect(lacking.stdout).toMatch(/^FAIL model file flux1-krea-dev-Q8_0\.gguf is missing: not in UnetLoaderGGUF\.unet_name; needed by imagegen-flux-krea$/m);
      expect(lacking.stdout).toMatch(/^ok {3}imagegen-flux-dev: every node class/m);
      expect(lacking.stdout).toMatch(/^unusable models on this ComfyUI: imagegen-flux-krea \(.*\{"imagegen-flux-krea":\{"enabled":false\}\}\)$/m);

      const config = path.join(dir, 'models.json');
      await writeFile(config, JSON.stringify({ 'imagegen-flux-krea': { enabled: false } }));
      const { stdout } = await contractCli(noKrea.url, { MODELS_CONFIG: config });
      expect(stdout).toContain('switched off in MODELS_CONFIG (not checked): imagegen-flux-krea');
      expect(stdout).toMatch(/^\d+ passed, 0 failed(, \d+ optional missing)?$/m);
      expect(stdout).toMatch(/^miss control file qwen_image_depth_diffsynth_controlnet\.safetensors is missing/m);
      expect(stdout).not.toContain('imagegen-flux-krea:');

      await writeFile(config, JSON.stringify({ 'imagegen-flux-krea': { enabled: 'no' } }));
      const refused = await contractCli(noKrea.url, { MODELS_CONFIG: config }).then(
        () => expect.fail('a bad MODELS_CONFIG was accepted'),
        (err: { code: number; stderr: string }) => err,
      );
      expect(refused.code).toBe(2);
      expect(refused.stderr.trim().split('\n')).toEqual([
        `model overrides file ${config}: imagegen-flux-krea.enabled: Invalid input: expected boolean, received string`,
      ]);
    } finally {
      await noKrea.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000); // three runs of the CLI, each a fresh tsx process: well over a minute next to two CPU hogs
});
