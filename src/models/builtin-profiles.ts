/**
 * The built-in profiles: every module in `./profiles/` default-exports one ModelProfile. The directory is
 * listed when this module loads, so a new model of an existing family is one new file there and nothing
 * else: no list to extend, no second edit that a test or the fake would have to mirror. A family folder
 * (`families/<name>/`, see families/index.ts) may carry its models in its own `profiles/`.
 *
 * Reads the directory through `process.getBuiltinModule` rather than a static `node:fs` import, as the
 * registry reads its overrides file. Under tsx and vitest the directory holds `.ts` files, in the compiled
 * service (`dist/`) `.js` files: both are loaded, declaration files and tests are not.
 */
import type { ModelProfile } from './profile.ts';
import { familyFolders } from './families/index.ts';

const PROFILE_MODULE = /^[^.].*(?<!\.d|\.test)\.(?:ts|js|mjs)$/;

/** Every profile module of `dir` (a `URL` ending in `/`); `where` names it in errors. */
async function loadProfileDirectory(dir: URL, where: string): Promise<ModelProfile[]> {
  const fs = process.getBuiltinModule('node:fs');
  if (!fs.existsSync(dir)) return [];
  const names = fs
    .readdirSync(dir)
    .filter((n) => PROFILE_MODULE.test(n))
    .sort();
  const profiles: ModelProfile[] = [];
  for (const name of names) {
    const mod = (await import(new URL(name, dir).href)) as { default?: unknown };
    const p = mod.default as ModelProfile | undefined;
    if (!p || typeof p !== 'object' || typeof p.id !== 'string' || typeof p.family !== 'string') {
      throw new Error(`${where}${name}: must default-export a ModelProfile (export default <profile>)`);
    }
    profiles.push(p);
  }
  return profiles;
}

/** `profiles/`, then each family folder's `profiles/` (a family folder may carry its models). */
async function loadProfiles(): Promise<ModelProfile[]> {
  const all = await loadProfileDirectory(new URL('./profiles/', import.meta.url), 'src/models/profiles/');
  for (const family of familyFolders()) {
    all.push(...(await loadProfileDirectory(new URL(`./families/${family}/profiles/`, import.meta.url), `src/models/families/${family}/profiles/`)));
  }
  return all;
}

/** Image models first, then video models; within each, by id (the order of `/sdapi/v1/sd-models`). */
export function byListOrder(a: ModelProfile, b: ModelProfile): number {
  const va = a.kinds.includes('video') ? 1 : 0;
  const vb = b.kinds.includes('video') ? 1 : 0;
  return va - vb || a.id.localeCompare(b.id);
}

export const BUILTIN_PROFILES: readonly ModelProfile[] = (await loadProfiles()).sort(byListOrder);
