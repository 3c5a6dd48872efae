/**
 * Engines are registered like families: one folder each under src/models/engines, found by the same folder
 * discovery (src/models/module-folders.ts); the profile's engine selects one, and an engine no folder
 * provides stops the start naming it.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../src/models/families/graph-builder.ts';
import { engineById, engineOf, engines, loadUnet } from '../../src/models/engines/index.ts';
import { loadModuleFolders, moduleFolders } from '../../src/models/module-folders.ts';
import { getProfile, parseModelOverrides, registerProfile, unregisterProfile } from '../../src/models/registry.ts';

afterEach(() => unregisterProfile('imagegen-test-engine'));

describe('engine registry', () => {
  it('holds one engine per folder of src/models/engines, each named as its folder', () => {
    const dirs = readdirSync(new URL('../../src/models/engines/', import.meta.url), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(dirs).toEqual(['comfyui', 'sglang']);
    expect(engines().map((e) => e.id)).toEqual(dirs);
  });

  it("selects the profile's engine (absent: comfyui), and its loader builds the graph's unet", () => {
    const flux = getProfile('imagegen-flux-dev')!;
    expect(engineOf(flux).id).toBe('comfyui');
    const g = new GraphBuilder();
    loadUnet(g, { ...flux, engine: 'sglang' });
    expect(Object.values(g.graph()).map((n) => n.class_type)).toEqual(['SGLDOptions', 'SGLDUNETLoader']);
  });

  it('an unknown engine is refused at start, naming it: in the overrides file and in a profile', () => {
    expect(() => parseModelOverrides({ 'imagegen-flux-dev': { engine: 'vllm' } }, 'models.json')).toThrow(
      'models.json: imagegen-flux-dev.engine: unknown engine "vllm" (known: comfyui, sglang)',
    );
    const base = getProfile('imagegen-flux-dev')!;
    expect(() => registerProfile({ ...base, id: 'imagegen-test-engine', aliases: [], engine: 'vllm' })).toThrow(
      'model profile imagegen-test-engine: engine: unknown engine "vllm" (known: comfyui, sglang)',
    );
    expect(() => registerProfile({ ...base, id: 'imagegen-test-engine', aliases: [], engine: 'sglang', sglang: undefined })).toThrow(
      /imagegen-test-engine: this model cannot run on the sglang engine/,
    );
    expect(() => engineById('vllm')).toThrow('unknown engine "vllm"');
  });
});

describe('folder discovery (families and engines)', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const make = (files: Record<string, string>): URL => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cd-folders-'));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), text);
    }
    return pathToFileURL(`${dir}/`);
  };
  const isThing = (x: unknown): x is { id: string } => typeof x === 'object' && x !== null && typeof (x as { id?: unknown }).id === 'string';

  it("lists the folders, skips hidden, private and index-less ones, and loads each index's default export", async () => {
    const url = make({
      'b/index.js': "export default { id: 'b' };\n",
      'a/index.js': "export default { id: 'a' };\n",
      'only-profiles/profiles/x.js': 'export default {};\n',
      '_private/index.js': "export default { id: 'private' };\n",
      '.hidden/index.js': "export default { id: 'hidden' };\n",
      'flat.js': "export default { id: 'flat' };\n",
    });
    expect(moduleFolders(url)).toEqual(['a', 'b', 'only-profiles']);
    expect(await loadModuleFolders(url, 'things', 'a Thing', isThing)).toEqual([{ id: 'a' }, { id: 'b' }]);
  });

  it('a folder whose index exports something else is an error naming the folder', async () => {
    const url = make({ 'bad/index.js': 'export const notDefault = 1;\n' });
    await expect(loadModuleFolders(url, 'src/models/engines', 'a ModelEngine', isThing)).rejects.toThrow(
      'src/models/engines/bad/index: must default-export a ModelEngine',
    );
  });
});
