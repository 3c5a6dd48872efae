/**
 * Comments cite nothing outside the repository: a fact the code relies on (a ComfyUI protocol behaviour, an
 * A1111 or video API detail, a durability rule) is written in docs/ and cited by that path, or stated in the
 * comment itself. This scans every source file of the service and the tools for citations of the design and
 * reference notes kept beside the repository, and checks that every docs/ page a source file names exists.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|js|cjs|mjs|py|sh)$/.test(e.name))
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

const FORBIDDEN: { what: string; re: RegExp }[] = [
  { what: 'DESIGN §N', re: /\bDESIGN(?:\.md)?\s*§/ },
  { what: 'ref/<note>.md', re: /\bref\/[\w-]+\.md/ },
  { what: '../shared', re: /\.\.\/shared\b/ },
  { what: 'shared/ref', re: /\bshared\/ref\b/ },
];

/** Every `file:line: text` in the scanned trees that matches one of the forbidden citations. */
function citations(files: string[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const { what, re } of FORBIDDEN) if (re.test(line)) found.push(`${file}:${i + 1}: cites ${what}: ${line.trim()}`);
      });
  }
  return found;
}

const files = [...sourceFiles('src'), ...sourceFiles('tools')];

describe('comments cite the repository only', () => {
  it('scans the service and the tools', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain('src/comfyui/client.ts');
    expect(files).toContain('tools/fake-comfyui/server.ts');
  });

  it('no source file cites the design notes or reference notes outside the repository', () => {
    expect(citations(files)).toEqual([]);
  });

  it('catches each kind of outside citation', () => {
    const probe = ['// per DESIGN §4', ' * (ref/comfyui-protocol.md §2)', '// see ../shared/tools/x.py', '// recorded: shared/ref/real-comfyui/a.json'];
    for (const line of probe)
      expect(
        FORBIDDEN.some(({ re }) => re.test(line)),
        line,
      ).toBe(true);
    expect(FORBIDDEN.some(({ re }) => re.test('// docs/comfyui-protocol.md: HTTP 200 can carry node_errors'))).toBe(false);
  });

  it('every docs/ page a source file cites exists', () => {
    const missing: string[] = [];
    for (const file of files) {
      for (const m of readFileSync(join(root, file), 'utf8').matchAll(/\bdocs\/[\w.-]+\.md\b/g)) {
        if (!existsSync(join(root, m[0]))) missing.push(`${file}: ${m[0]}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
