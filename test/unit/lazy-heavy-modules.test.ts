/**
 * The service's modules must not load sharp (libvips) or the AWS SDK up front: each costs 20–25 MB of RSS
 * (imported alone) for the life of a process that, with PNG output and the filesystem blob store, never uses them
 * (the peak RSS budget). They load on first use instead (images/encode.ts, blobs/from-config.ts).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsxLoader = pathToFileURL(path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

/** Packages of these CommonJS files (sharp's ESM entry shows as its native addon, @img/sharp-*) in the module cache of a fresh node after importing `entry`. */
function heavyModulesLoadedBy(entry: string, after = ''): string[] {
  const script = `
    import { createRequire } from 'node:module';
    const m = await import(${JSON.stringify(pathToFileURL(path.join(root, entry)).href)});
    ${after}
    const require = createRequire(import.meta.url);
    const names = new Set(Object.keys(require.cache).map((k) => /node_modules\\/(sharp|@img\\/sharp-[^/]+|@aws-sdk\\/[^/]+)\\//.exec(k)?.[1]?.replace(/^@img\\/sharp-.*/, 'sharp')).filter(Boolean));
    process.stdout.write(JSON.stringify([...names]));
  `;
  const out = execFileSync(process.execPath, ['--import', tsxLoader, '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out) as string[];
}

/** Which of `packages` (CommonJS) are in the module cache of a fresh node after importing `entry`. */
function packagesLoadedBy(entry: string, packages: string[]): string[] {
  const script = `
    import { createRequire } from 'node:module';
    await import(${JSON.stringify(pathToFileURL(path.join(root, entry)).href)});
    const keys = Object.keys(createRequire(import.meta.url).cache);
    process.stdout.write(JSON.stringify(${JSON.stringify(packages)}.filter((p) => keys.some((k) => k.includes('/node_modules/' + p + '/')))));
  `;
  const out = execFileSync(process.execPath, ['--import', tsxLoader, '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out) as string[];
}

describe('heavy modules load on first use', () => {
  it("each part loads where it runs: the CLI loads neither the Temporal worker SDK (start's front) nor Fastify (its worker thread)", () => {
    // main.ts runs a command when imported: its static imports are checked through the modules it imports.
    expect(packagesLoadedBy('src/app/services.ts', ['@temporalio/worker', 'fastify'])).toEqual([]);
    expect(packagesLoadedBy('src/app/worker-thread.ts', ['@temporalio/worker', 'fastify'])).toEqual([]);
    // The thread's entry, imported on a main thread (where it runs nothing): the SDK loads only once it runs.
    expect(packagesLoadedBy('src/app/worker-thread-main.ts', ['@temporalio/worker', 'fastify'])).toEqual([]);
    // The check sees these packages when they do load.
    expect(packagesLoadedBy('src/worker/worker.ts', ['@temporalio/worker', 'fastify'])).toEqual(['@temporalio/worker']);
  });

  it('importing the service (start/worker/api) loads neither sharp nor the AWS SDK', () => {
    expect(heavyModulesLoadedBy('src/app/services.ts')).toEqual([]);
  });

  it('they still load when used: JPEG output through sharp, BLOB_STORE=s3 through the AWS SDK', () => {
    const loaded = heavyModulesLoadedBy(
      'src/images/encode.ts',
      `
      const { encodeOutput } = m;
      const { PNG } = (await import('pngjs')).default;
      const png = PNG.sync.write(Object.assign(new PNG({ width: 2, height: 2 }), {}));
      const out = await encodeOutput(png, { format: 'jpeg', quality: 80 }, 'infotext');
      if (out.mime !== 'image/jpeg') throw new Error('not a jpeg');
      const { blobStoreFromConfig } = await import(${JSON.stringify(pathToFileURL(path.join(root, 'src/blobs/from-config.ts')).href)});
      const { loadConfig } = await import(${JSON.stringify(pathToFileURL(path.join(root, 'src/config/config.ts')).href)});
      await blobStoreFromConfig(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_REGION: 'eu-west-1' }));
      `,
    );
    expect(loaded).toContain('sharp');
    expect(loaded).toContain('@aws-sdk/client-s3');
  });
});
