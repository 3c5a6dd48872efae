/**
 * One workflow bundle for all the services a test run starts. Under tsx a service bundles the workflows with
 * webpack at every start (seconds of CPU each, and the suite starts dozens); the bundle depends only on the
 * sources and the installed packages, so it is built once per content of those, cached in the temp dir, and
 * handed to each service through the worker's test hook (TEST_BUNDLE_ENV). Test files run in parallel
 * processes: a lock directory makes the second one wait for the first one's build instead of repeating it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const cacheDir = path.join(os.tmpdir(), 'comfy-durable-test-bundles');
/** A lock older than this was left by a killed run. */
const STALE_LOCK_MS = 5 * 60_000;
/** The worker's hook (checked against it by the compiler, without loading the worker's modules here). */
export const TEST_BUNDLE_ENV: typeof import('../../src/worker/worker.ts').TEST_BUNDLE_ENV = 'COMFY_DURABLE_TEST_WORKFLOW_BUNDLE';

/** Digest of everything a bundle is made of: every file under src/, the lockfile, and the node version. */
function sourcesDigest(): string {
  const hash = createHash('sha256');
  hash.update(process.version);
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        hash.update(path.relative(root, p));
        hash.update(readFileSync(p));
      }
    }
  };
  walk(path.join(root, 'src'));
  hash.update(readFileSync(path.join(root, 'package-lock.json')));
  return hash.digest('hex').slice(0, 24);
}

let memo: Promise<string> | undefined;

/** The path of a current bundle of src/workflows with the default interceptors, built on first use. */
export function sharedWorkflowBundle(): Promise<string> {
  memo ??= build().catch((err: unknown) => {
    memo = undefined;
    throw err;
  });
  return memo;
}

async function build(): Promise<string> {
  const out = path.join(cacheDir, `workflow-bundle-${sourcesDigest()}.js`);
  if (existsSync(out)) return out;
  mkdirSync(cacheDir, { recursive: true });
  const lock = `${out}.lock`;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (existsSync(out)) return out;
      try {
        if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      } catch {
        // Removed by its owner meanwhile: try again.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    if (existsSync(out)) return out;
    // The very function a service calls, so the bundle has the same entry, interceptors and bundler flags.
    const { bundleWorkflowsInChild } = await import('../../src/worker/worker.ts');
    const saved = process.env[TEST_BUNDLE_ENV];
    delete process.env[TEST_BUNDLE_ENV];
    const work = mkdtempSync(path.join(cacheDir, 'build-'));
    try {
      const built = await bundleWorkflowsInChild(work);
      renameSync(built, out);
    } finally {
      if (saved !== undefined) process.env[TEST_BUNDLE_ENV] = saved;
      rmSync(work, { recursive: true, force: true });
    }
    return out;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
