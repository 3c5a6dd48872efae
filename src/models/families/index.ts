/**
 * Family → graph builder: the built-in builders listed here, and every family folder `families/<name>/`
 * whose `index.ts` default-exports a FamilyBuilder, found by listing the directory when this module loads
 * (as builtin-profiles.ts finds the profiles). A new family is one folder: its builder, and its models in
 * the folder's `profiles/` (or in `src/models/profiles/`); nothing else to extend.
 */
import type { ModelFamily } from '../profile.ts';
import type { FamilyBuilder } from './common.ts';
import { fluxBuilder } from './flux.ts';
import { fluxKontextBuilder } from './flux-kontext.ts';
import { qwenBuilder } from './qwen.ts';
import { qwenEditBuilder } from './qwen-edit.ts';
import { h3Builder } from './h3.ts';
import { wan22Builder } from './wan22.ts';

/** The family folders beside this module: `<name>/index.ts` (`.js` in the compiled service). */
export function familyFolders(): string[] {
  const fs = process.getBuiltinModule('node:fs');
  return fs
    .readdirSync(new URL('./', import.meta.url), { withFileTypes: true })
    .filter((e) => e.isDirectory() && /^[^._]/.test(e.name))
    .map((e) => e.name)
    .sort();
}

async function loadFamilyFolders(): Promise<FamilyBuilder[]> {
  const fs = process.getBuiltinModule('node:fs');
  const builders: FamilyBuilder[] = [];
  for (const name of familyFolders()) {
    const file = ['index.ts', 'index.js'].map((f) => new URL(`./${name}/${f}`, import.meta.url)).find((u) => fs.existsSync(u));
    if (!file) continue;
    const b = ((await import(file.href)) as { default?: FamilyBuilder }).default;
    if (!b || typeof b.family !== 'string' || typeof b.build !== 'function') {
      throw new Error(`src/models/families/${name}/index: must default-export a FamilyBuilder (export default <builder>)`);
    }
    builders.push(b);
  }
  return builders;
}

const BUILDERS = new Map<ModelFamily, FamilyBuilder>();
for (const b of [fluxBuilder, fluxKontextBuilder, qwenBuilder, qwenEditBuilder, wan22Builder, h3Builder, ...(await loadFamilyFolders())]) {
  if (BUILDERS.has(b.family)) throw new Error(`model family "${b.family}" has two builders`);
  BUILDERS.set(b.family, b);
}

export function familyBuilder(family: ModelFamily): FamilyBuilder {
  const builder = BUILDERS.get(family);
  if (!builder) throw new Error(`unknown model family "${family}" (known: ${[...BUILDERS.keys()].join(', ')})`);
  return builder;
}

export { OUTPUT_NODE, type BuildInput, type FamilyBuilder } from './common.ts';
export type { VideoFamily, VideoTaskSpec } from './video-family.ts';
