/**
 * The built-in profiles: every module in `./profiles/` default-exports one ModelProfile. The directory is
 * listed when this module loads, so a new model of an existing family is one new file there and nothing
 * else: no list to extend, no second edit that a test or the fake would have to mirror.
 *
 * Reads the directory through `process.getBuiltinModule` rather than a static `node:fs` import, as the
 * registry reads its overrides file. Under tsx and vitest the directory holds `.ts` files, in the compiled
 * service (`dist/`) `.js` files: both are loaded, declaration files and tests are not.
 */
import type { ModelProfile } from './profile.ts';

const PROFILE_MODULE = /^[^.].*(?<!\.d|\.test)\.(?:ts|js|mjs)$/;

async function loadProfileDirectory(): Promise<ModelProfile[]> {
  const fs = process.getBuiltinModule('node:fs');
  const dir = new URL('./profiles/', import.meta.url);
  const names = fs
    .readdirSync(dir)
    .filter((n) => PROFILE_MODULE.test(n))
    .sort();
  const profiles: ModelProfile[] = [];
  for (const name of names) {
    const mod = (await import(new URL(name, dir).href)) as { default?: unknown };
    const p = mod.default as ModelProfile | undefined;
    if (!p || typeof p !== 'object' || typeof p.id !== 'string' || typeof p.family !== 'string') {
      throw new Error(`src/models/profiles/${name}: must default-export a ModelProfile (export default <profile>)`);
    }
    profiles.push(p);
  }
  return profiles;
}

/** Image models first, then video models; within each, by id (the order of `/sdapi/v1/sd-models`). */
export function byListOrder(a: ModelProfile, b: ModelProfile): number {
  const va = a.kinds.includes('video') ? 1 : 0;
  const vb = b.kinds.includes('video') ? 1 : 0;
  return va - vb || a.id.localeCompare(b.id);
}

export const BUILTIN_PROFILES: readonly ModelProfile[] = (await loadProfileDirectory()).sort(byListOrder);
