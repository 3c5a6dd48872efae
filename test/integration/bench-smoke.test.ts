/**
 * The benchmarks still run: `bench/run.ts --smoke` (a handful of samples each, figures meaningless) prints
 * every block with its figure, its budget and the figure before the late-bound reshape, and exits 0 (no
 * benchmark errored). Performance itself is judged by `npm run bench`, never here.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('bench smoke run', () => {
  it('every benchmark prints its block and the summary, before and after', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'bench/run.ts', '--smoke'], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 300_000,
    });
    for (const name of ['overhead', 'latency', 'throughput', 'memory', 'history']) {
      expect(stdout).toContain(`[${name}]`);
    }
    expect(stdout).toContain('SUMMARY');
    expect(stdout.match(/^ {2}before : /gm)?.length).toBe(5);
    expect(stdout).not.toMatch(/result : ERROR/);
  }, 320_000);
});
