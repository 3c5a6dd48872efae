/**
 * The engines, found like the families: every folder `engines/<id>/` whose `index.ts` default-exports a
 * ModelEngine (model-engine.ts), listed when this module loads (module-folders.ts). A new engine is one
 * folder; nothing else to extend. The profile's `engine` chooses one (absent: `comfyui`); an engine no folder
 * provides is an error naming it. Family builders load their diffusion model and their LoRAs through the
 * functions here, so no builder knows which engine renders. Each engine's custom-node packages are made
 * known to the ComfyUI client here, so it can name them when their nodes are missing or fail.
 */
import { z } from 'zod';
import type { NodeLink } from '../../comfyui/graph.ts';
import { registerCustomNodePackages } from '../../comfyui/plugins.ts';
import type { LoraUse } from '../../contracts/render.ts';
import { loadModuleFolders } from '../module-folders.ts';
import type { Engine, ModelProfile } from '../profile.ts';
import type { ModelEngine, NodeAdder } from './model-engine.ts';

export type { FileNeed, ModelEngine, NodeAdder } from './model-engine.ts';
export { isGguf } from './model-engine.ts';

/** The engine of a profile without an `engine`. */
export const DEFAULT_ENGINE: Engine = 'comfyui';

const isModelEngine = (e: unknown): e is ModelEngine =>
  typeof e === 'object' && e !== null && typeof (e as ModelEngine).id === 'string' && typeof (e as ModelEngine).loadUnet === 'function';

const ENGINES = new Map<Engine, ModelEngine>();
for (const e of await loadModuleFolders(new URL('./', import.meta.url), 'src/models/engines', 'a ModelEngine', isModelEngine)) {
  if (ENGINES.has(e.id)) throw new Error(`engine "${e.id}" is provided twice`);
  ENGINES.set(e.id, e);
  registerCustomNodePackages(e.plugins);
}
if (!ENGINES.has(DEFAULT_ENGINE)) throw new Error(`src/models/engines: the default engine "${DEFAULT_ENGINE}" has no folder`);

/** Every engine, by id. */
export function engines(): ModelEngine[] {
  return [...ENGINES.values()];
}

/** The engine `id` names; throws naming it when no folder provides it. */
export function engineById(id: Engine): ModelEngine {
  const engine = ENGINES.get(id);
  if (!engine) throw new Error(`unknown engine "${id}" (known: ${[...ENGINES.keys()].join(', ')})`);
  return engine;
}

export function engineOf(profile: ModelProfile): ModelEngine {
  return engineById(profile.engine ?? DEFAULT_ENGINE);
}

/** Throws naming `where` when the profile's engine is unknown or cannot run it (checked for every profile at load). */
export function checkProfileEngine(profile: ModelProfile, where: string): void {
  const id = profile.engine ?? DEFAULT_ENGINE;
  if (!ENGINES.has(id)) throw new Error(`${where}: engine: unknown engine "${id}" (known: ${[...ENGINES.keys()].join(', ')})`);
  const why = engineById(id).cannotRun(profile);
  if (why) throw new Error(`${where}: this model cannot run on the ${id} engine (${why})`);
}

/** The model files of the profile's engine. */
export function engineFiles(profile: ModelProfile): Readonly<Record<string, string>> {
  return engineOf(profile).files(profile);
}

export function requireFile(profile: ModelProfile, role: string): string {
  const name = engineFiles(profile)[role];
  if (!name) throw new Error(`model ${profile.id}: no file configured for role "${role}"`);
  return name;
}

/** The diffusion model of file role `role` (node id `unet`), as the profile's engine loads it. */
export function loadUnet(g: NodeAdder, profile: ModelProfile, role = 'unet'): NodeLink {
  return engineOf(profile).loadUnet(g, profile, requireFile(profile, role));
}

/** `<lora:name:weight>` tags → the profile's engine's chain of LoRA nodes after the loaders, in the prompt's order. */
export function applyLoras(
  g: NodeAdder,
  profile: ModelProfile,
  loras: readonly LoraUse[] | undefined,
  model: NodeLink,
  clip: NodeLink,
): { model: NodeLink; clip: NodeLink } {
  return engineOf(profile).applyLoras(g, profile, loras ?? [], model, clip);
}

/** The engine keys of an overrides-file entry: `engine` (an id) and each engine's own section under its id. */
export function engineOverrideShape(): Record<string, z.ZodOptional<z.ZodType>> {
  const shape: Record<string, z.ZodOptional<z.ZodType>> = { engine: z.string().optional() };
  for (const e of ENGINES.values()) if (e.overrides) shape[e.id] = e.overrides.schema.optional();
  return shape;
}

/** What an overrides-file entry holds for the engines (the shape engineOverrideShape checks). */
export type EngineOverride = { engine?: Engine } & { [engineId: string]: unknown };

/**
 * Throws an Error naming `<source>: <id>[.<path>]` for an engine setting that cannot run: an unknown engine,
 * an engine (chosen or given a section) that cannot run the model, a section its engine refuses.
 */
export function checkEngineOverride(source: string, base: ModelProfile, o: EngineOverride, roles: readonly string[]): void {
  const cannot = (e: ModelEngine): void => {
    const why = e.cannotRun(base);
    if (why) throw new Error(`${source}: ${base.id}: this model cannot run on the ${e.id} engine (${why})`);
  };
  if (o.engine !== undefined) {
    if (!ENGINES.has(o.engine)) throw new Error(`${source}: ${base.id}.engine: unknown engine "${o.engine}" (known: ${[...ENGINES.keys()].join(', ')})`);
    cannot(engineById(o.engine));
  }
  for (const e of ENGINES.values()) {
    const section = o[e.id];
    if (section === undefined || !e.overrides) continue;
    cannot(e);
    e.overrides.check(source, base, section, roles);
  }
}

/** The profile's fields the entry's engine sections change (each engine's section laid over its built-in values). */
export function applyEngineOverrides(base: ModelProfile, o: EngineOverride): Partial<ModelProfile> {
  const changed: Partial<ModelProfile> = {};
  for (const e of ENGINES.values()) if (e.overrides) Object.assign(changed, e.overrides.apply(base, o[e.id]));
  return changed;
}
