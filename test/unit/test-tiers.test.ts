/**
 * The named tiers (`npm run test:unit`, `test:medium`, `test:faults`) are views of the one suite `npm test` runs:
 * every test file belongs to exactly one tier, so a new folder of tests cannot fall outside all of them.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function testFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) return testFiles(rel);
    return e.name.endsWith('.test.ts') ? [rel] : [];
  });
}

/** The folders a tier script passes to `vitest run`. */
function tierFolders(script: string): string[] {
  const m = /^vitest run ((?:test\/[\w-]+ ?)+)$/.exec(script);
  if (!m) throw new Error(`tier script is not "vitest run <test folders>": ${script}`);
  return m[1]!.trim().split(' ');
}

describe('test tiers', () => {
  const scripts = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const tiers = ['test:unit', 'test:medium', 'test:faults'].map((name) => ({ name, folders: tierFolders(scripts[name] ?? '') }));

  it('every test file is in exactly one tier', () => {
    const files = testFiles('test');
    expect(files.length).toBeGreaterThan(50);
    const misplaced = files.flatMap((f) => {
      const owners = tiers.filter((t) => t.folders.some((d) => f.startsWith(`${d}/`))).map((t) => t.name);
      return owners.length === 1 ? [] : [`${f}: ${owners.length === 0 ? 'in no tier' : `in ${owners.join(' and ')}`}`];
    });
    expect(misplaced).toEqual([]);
  });

  it('npm test runs the whole suite, not a tier', () => {
    expect(scripts.test).toMatch(/vitest run$/);
  });
});
