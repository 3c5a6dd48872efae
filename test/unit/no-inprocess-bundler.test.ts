/**
 * `start`'s worker thread keeps the Temporal SDK's in-process bundler (webpack, memfs, unionfs) out
 * (src/worker/no-inprocess-bundler.ts). Held to the pinned SDK in a process of its own (vitest's forks pool: a
 * fresh module cache per file): imported first, the SDK's Worker loads without those modules, takes a bundle
 * file, the stand-in's default interceptor list is the real module's, and a request to bundle says why it cannot.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLER_MODULE, keepBundlerOut, standIn } from '../../src/worker/no-inprocess-bundler.ts';

const require = createRequire(import.meta.url);
const loaded = (name: string): boolean => Object.keys(require.cache).some((f) => f.includes(`${path.sep}node_modules${path.sep}${name}${path.sep}`));

describe('the SDK without its in-process bundler', () => {
  it('loads its Worker without webpack, memfs or unionfs, the stand-in in the bundler module’s place', async () => {
    // On a main thread (this test's), importing the module installs nothing: the worker thread's entry calls it there.
    expect(require.cache[BUNDLER_MODULE]).toBeUndefined();
    expect(keepBundlerOut()).toBe(true);
    const { Worker } = await import('@temporalio/worker');
    expect(typeof Worker.create).toBe('function');
    expect(require.cache[BUNDLER_MODULE]?.exports).toBe(standIn);
    for (const name of ['webpack', 'memfs', 'unionfs']) expect(loaded(name), name).toBe(false);
  });

  it("takes a bundle file as the SDK would: its default interceptor list is the one the SDK's Worker compares against", async () => {
    const { Worker } = await import('@temporalio/worker');
    const codePath = path.join(mkdtempSync(path.join(os.tmpdir(), 'bundle-')), 'bundle.js');
    const map = Buffer.from(JSON.stringify({ version: 3, sources: [], names: [], mappings: '' })).toString('base64');
    writeFileSync(codePath, `var __TEMPORAL__ = {};\n//# sourceMappingURL=data:application/json;base64,${map}\n`);
    const warnings: string[] = [];
    const logger = {
      warn: (m: string) => warnings.push(m),
      info: () => undefined,
      debug: () => undefined,
      error: () => undefined,
      trace: () => undefined,
      log: () => undefined,
    };
    const sdkWorker = Worker as unknown as { getOrCreateBundle(o: unknown, l: unknown): Promise<{ code: string }> };
    const bundle = await sdkWorker.getOrCreateBundle(
      { workflowBundle: { codePath }, interceptors: { workflowModules: standIn.defaultWorkflowInterceptorModules } },
      logger,
    );
    expect(bundle.code).toContain('__TEMPORAL__');
    // A list that differs from the SDK's default would be warned about (the SDK compares with the stand-in's).
    expect(warnings).toEqual([]);
  });

  it("gives the real bundler's default interceptor list (read by a plain node, where the real module loads)", () => {
    const script = `process.stdout.write(JSON.stringify(require(${JSON.stringify(BUNDLER_MODULE)}).defaultWorkflowInterceptorModules))`;
    const real = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
    expect(standIn.defaultWorkflowInterceptorModules).toEqual(real);
  });

  it('asked to bundle in this thread, says why it cannot', async () => {
    const { bundleWorkflowCode } = await import('@temporalio/worker');
    await expect(bundleWorkflowCode({ workflowsPath: '/nowhere' })).rejects.toThrow(/no in-process workflow bundler in this thread/);
  });
});
