/**
 * The ComfyUI contract checks (`comfy-durable contract <url>`) against the fake: the same checks an operator
 * runs against a real ComfyUI must hold for the fake our other tests trust.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runContractChecks } from '../../src/comfyui/contract.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../src/fake-comfyui/server.ts';

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
    const results = await runContractChecks(fake.url);
    expect(results.length).toBeGreaterThanOrEqual(7);
    expect(results.filter((r) => !r.ok)).toEqual([]);
  });

  it('fail when ComfyUI lacks a node the profiles need', async () => {
    // A ComfyUI without ComfyUI-GGUF: the fixture minus the GGUF loaders.
    const { loadObjectInfoFixture } = await import('../../src/fake-comfyui/fixture.ts');
    const info = loadObjectInfoFixture();
    delete info.UnetLoaderGGUF;
    const bare = await startFakeComfyUI({ port: 0, objectInfo: info });
    try {
      const results = await runContractChecks(bare.url);
      const nodes = results.find((r) => r.name.startsWith('object_info'));
      expect(nodes?.ok).toBe(false);
      expect(nodes?.detail).toContain('UnetLoaderGGUF');
    } finally {
      await bare.close();
    }
  });

  it('the CLI prints one line per check and exits 0', async () => {
    const root = path.resolve(import.meta.dirname, '..', '..');
    const { stdout } = await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), path.join(root, 'src/cli/main.ts'), 'contract', fake.url]);
    expect(stdout).toMatch(/^\d+ passed, 0 failed$/m);
    expect(stdout).toContain('ok   a client-chosen prompt id is followed to completion');
  });
});
