/**
 * How model knowledge is registered: one folder per thing, `<dir>/<name>/index.ts` (`.js` in the compiled
 * service) default-exporting it, found by listing `<dir>` when the registering module loads. Families
 * (families/index.ts) and engines (engines/index.ts) are found this way, so adding one is a folder and no list
 * to extend. Reads the directory through `process.getBuiltinModule`, as builtin-profiles.ts does.
 */

/** The sub-folders of `dir` (a `URL` ending in `/`), sorted; hidden (`.x`) and private (`_x`) ones left out. */
export function moduleFolders(dir: URL): string[] {
  const fs = process.getBuiltinModule('node:fs');
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && /^[^._]/.test(e.name))
    .map((e) => e.name)
    .sort();
}

/**
 * The default export of every folder's `index` module in `dir`, checked by `isValid`; a folder without an
 * index module is skipped (a family folder may hold only profiles). `where` (e.g. `src/models/engines`) and
 * `what` (e.g. `a ModelEngine`) name the folder and the expected export in the error for a bad one.
 */
export async function loadModuleFolders<T>(dir: URL, where: string, what: string, isValid: (x: unknown) => x is T): Promise<T[]> {
  const fs = process.getBuiltinModule('node:fs');
  const found: T[] = [];
  for (const name of moduleFolders(dir)) {
    const file = ['index.ts', 'index.js'].map((f) => new URL(`./${name}/${f}`, dir)).find((u) => fs.existsSync(u));
    if (!file) continue;
    const value = ((await import(file.href)) as { default?: unknown }).default;
    if (!isValid(value)) throw new Error(`${where}/${name}/index: must default-export ${what}`);
    found.push(value);
  }
  return found;
}
