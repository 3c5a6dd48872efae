/**
 * Family → graph builder: every family folder `families/<name>/` whose `index.ts` default-exports a
 * FamilyBuilder, found by listing the directory when this module loads (module-folders.ts, as engines are
 * found). A new family is one folder: its builder, and its models in the folder's `profiles/` (or in
 * `src/models/profiles/`); nothing else to extend. The flat modules beside the folders are what families
 * share (common.ts, graph-builder.ts, controls.ts, ...) and the graphs of no model (upscale, preprocess, segment).
 */
import type { ModelFamily } from '../profile.ts';
import type { FamilyBuilder } from './common.ts';
import { loadModuleFolders, moduleFolders } from '../module-folders.ts';

const FAMILIES_DIR = new URL('./', import.meta.url);

/** The family folders beside this module (`<name>/`, with an `index.ts` builder, a `profiles/` folder, or both). */
export function familyFolders(): string[] {
  return moduleFolders(FAMILIES_DIR);
}

const isFamilyBuilder = (b: unknown): b is FamilyBuilder =>
  typeof b === 'object' && b !== null && typeof (b as FamilyBuilder).family === 'string' && typeof (b as FamilyBuilder).build === 'function';

const BUILDERS = new Map<ModelFamily, FamilyBuilder>();
for (const b of await loadModuleFolders(FAMILIES_DIR, 'src/models/families', 'a FamilyBuilder', isFamilyBuilder)) {
  if (BUILDERS.has(b.family)) throw new Error(`model family "${b.family}" has two builders`);
  BUILDERS.set(b.family, b);
}

export function familyBuilder(family: ModelFamily): FamilyBuilder {
  const builder = BUILDERS.get(family);
  if (!builder) throw new Error(`unknown model family "${family}" (known: ${[...BUILDERS.keys()].join(', ')})`);
  return builder;
}

export { familyBuilds, OUTPUT_NODE, type BuildInput, type FamilyBuilder } from './common.ts';
export type { VideoFamily, VideoTaskSpec } from './video-family.ts';
