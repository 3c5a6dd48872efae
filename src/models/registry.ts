/**
 * The model registry: the profiles of `profiles/` (builtin-profiles.ts lists the directory) and those
 * registered at run time, plus operator overrides (file names, defaults, timeouts) loaded from a JSON file,
 * so swapping a model file needs no code change. Workflow code never imports it: the submitter builds the
 * graph, so listing a directory and importing its modules at load is fine here.
 */
import { z } from 'zod';
import { applyEngineOverrides, checkEngineOverride, checkProfileEngine, engineOverrideShape, type EngineOverride } from './engines/index.ts';
import { BUILTIN_PROFILES, byListOrder } from './builtin-profiles.ts';
import { familyBuilder, familyBuilds } from './families/index.ts';
import type { ModelProfile } from './profile.ts';
import { isComfySampler, isComfyScheduler } from './samplers.ts';
import { isSpace, trimEndWhere } from '../text/trim.ts';

/** Profiles added at run time (`registerProfile`): tests, and embedders with models of their own. */
const added = new Map<string, ModelProfile>();

/** Every base profile (built-in and added), in `/sdapi/v1/sd-models` order. */
function baseProfiles(): ModelProfile[] {
  return [...BUILTIN_PROFILES, ...added.values()].sort(byListOrder);
}

const positiveInt = z.number().int().positive();
const fixedEntrySchema = z.strictObject({
  /** `false`: the model is switched off — not listed, not rendered, not checked by the contract. */
  enabled: z.boolean().optional(),
  files: z.record(z.string(), z.string().min(1)).optional(),
  defaults: z
    .strictObject({
      steps: positiveInt.max(10000),
      cfg: z.number().min(0).max(100),
      guidance: z.number().min(0).max(100),
      sampler: z.string(),
      scheduler: z.string(),
      width: positiveInt,
      height: positiveInt,
      shift: z.number().min(0).max(100),
    })
    .partial()
    .optional(),
  stallTimeoutMs: positiveInt.optional(),
  deadlineMs: positiveInt.optional(),
});

/** One model's entry: the fixed keys, `engine` and each engine's own section (engines/<id>/, e.g. `sglang`). */
export type ModelOverrideEntry = z.infer<typeof fixedEntrySchema> & EngineOverride;

/**
 * `{ "<profile id>": { "enabled"?: false, "files": {...}, "defaults": {...}, "stallTimeoutMs"?, "deadlineMs"?, "engine"?,
 * "<engine id>"?: {...} } }` (the sglang engine's: `"sglang": { "files"?, "options"? }`).
 */
export type ModelOverrides = Record<string, ModelOverrideEntry>;
// The engines' keys are known only once their folders are listed, so the entry's static type is declared above.
export const modelOverridesSchema = z.record(
  z.string(),
  z.strictObject({ ...fixedEntrySchema.shape, ...engineOverrideShape() }),
) as unknown as z.ZodType<ModelOverrides>;

let activeOverrides: ModelOverrides = {};
let effective: ReadonlyMap<string, ModelProfile> = build({});

function build(overrides: ModelOverrides): ReadonlyMap<string, ModelProfile> {
  const map = new Map<string, ModelProfile>();
  for (const base of baseProfiles()) {
    const o = overrides[base.id];
    if (o?.enabled === false) continue;
    const profile: ModelProfile = o
      ? {
          ...base,
          files: { ...base.files, ...o.files },
          defaults: { ...base.defaults, ...o.defaults },
          stallTimeoutMs: o.stallTimeoutMs ?? base.stallTimeoutMs,
          deadlineMs: o.deadlineMs ?? base.deadlineMs,
          ...((o.engine ?? base.engine) ? { engine: o.engine ?? base.engine } : {}),
          ...applyEngineOverrides(base, o),
        }
      : base;
    map.set(base.id, deepFreeze(profile));
  }
  return map;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/**
 * Validates overrides (shape, known profile ids, file roles the family's builder reads, ComfyUI sampler and
 * scheduler names) and returns them. Throws an Error naming the offending path.
 */
export function parseModelOverrides(json: unknown, source = 'model overrides'): ModelOverrides {
  const parsed = modelOverridesSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path.map(String).join('.') ?? '';
    throw new Error(`${source}: ${path ? `${path}: ` : ''}${issue?.message ?? 'invalid'}`);
  }
  const known = new Map(baseProfiles().map((p) => [p.id, p]));
  for (const [id, entry] of Object.entries(parsed.data)) {
    const base = known.get(id);
    if (!base) throw new Error(`${source}: unknown model "${id}" (known: ${[...known.keys()].join(', ')})`);
    const roles = familyBuilder(base.family).fileRoles;
    for (const role of Object.keys(entry.files ?? {})) {
      if (!roles.includes(role)) {
        throw new Error(`${source}: ${id}.files.${role}: unknown file role (valid: ${roles.join(', ')})`);
      }
    }
    checkEngineOverride(source, base, entry, roles);
    // An edit model needs the full vision-language encoder; a language-only GGUF encoder loads,
    // then fails inside the vision projector on the first render. Refuse it at start instead.
    const encoder = entry.files?.textEncoder;
    if (base.family === 'qwen-edit' && encoder !== undefined && /\.gguf$/i.test(encoder)) {
      throw new Error(
        `${source}: ${id}.files.textEncoder: "${encoder}" is a GGUF (language-only) encoder; Qwen-Image-Edit needs the full VL encoder (e.g. qwen_2.5_vl_7b_fp8_scaled.safetensors)`,
      );
    }
    const d = entry.defaults;
    if (d?.sampler !== undefined && !isComfySampler(d.sampler)) {
      throw new Error(`${source}: ${id}.defaults.sampler: "${d.sampler}" is not a ComfyUI sampler name`);
    }
    if (d?.scheduler !== undefined && !isComfyScheduler(d.scheduler)) {
      throw new Error(`${source}: ${id}.defaults.scheduler: "${d.scheduler}" is not a ComfyUI scheduler name`);
    }
    for (const side of ['width', 'height'] as const) {
      const v = d?.[side];
      if (v !== undefined && (v % base.grid !== 0 || v < base.minSide || v > base.maxSide)) {
        throw new Error(`${source}: ${id}.defaults.${side}: ${v} must be a multiple of ${base.grid} in ${base.minSide}..${base.maxSide}`);
      }
    }
  }
  return parsed.data;
}

/** Replaces the active overrides (validated first; on error the previous ones stay). */
export function applyModelOverrides(overrides: unknown, source?: string): ModelOverrides {
  const parsed = parseModelOverrides(overrides, source);
  activeOverrides = parsed;
  effective = build(parsed);
  return parsed;
}

/** Back to the built-in profiles. */
export function resetModelOverrides(): void {
  activeOverrides = {};
  effective = build({});
}

/**
 * Reads, validates and applies the overrides file at `path` (the caller takes it from configuration).
 * No path: built-in profiles only. A missing or invalid file is an error naming the file: start-up should
 * stop rather than render with file names the operator did not intend.
 */
export function loadModelOverrides(path?: string): ModelOverrides {
  if (!path) {
    resetModelOverrides();
    return {};
  }
  const fs = process.getBuiltinModule('node:fs');
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`model overrides file ${path}: ${(e as Error).message}`, { cause: e });
  }
  return applyModelOverrides(json, `model overrides file ${path}`);
}

/** The models MODELS_CONFIG switches off (`"enabled": false`), in list order. */
export function disabledModels(): string[] {
  return baseProfiles()
    .filter((p) => activeOverrides[p.id]?.enabled === false)
    .map((p) => p.id);
}

/** Every model the service renders (switched-off ones left out). */
export function listProfiles(): ModelProfile[] {
  return [...effective.values()];
}

const isVideo = (p: ModelProfile): boolean => p.kinds.includes('video');

/** The models the A1111 routes render (`/sdapi/v1/sd-models`). */
export function listImageProfiles(): ModelProfile[] {
  return listProfiles().filter((p) => !isVideo(p));
}

/** The models the `/v1/videos` routes render. */
export function listVideoProfiles(): ModelProfile[] {
  return listProfiles().filter(isVideo);
}

export function getProfile(id: string): ModelProfile | undefined {
  return effective.get(id);
}

const norm = (s: string): string => s.trim().toLowerCase();
/** A1111's ` [hash]` suffix on a checkpoint title (found from the end: the name is request text). */
function stripHash(s: string): string {
  if (!s.endsWith(']')) return s;
  const open = s.lastIndexOf('[');
  if (open < 0 || !/^[0-9a-f]{8,64}$/i.test(s.slice(open + 1, -1))) return s;
  return trimEndWhere(s.slice(0, open), isSpace);
}
const stripExt = (s: string): string => s.replace(/\.(gguf|safetensors|ckpt|pt|pth|bin)$/i, '');

/**
 * A model by id, title, alias or unet file name (with or without extension), case-insensitive. A1111 title
 * forms `name [hash]` are accepted too: clients echo `sd-models` titles and option values in that form.
 */
export function resolveModel(name: string): ModelProfile | undefined {
  const candidates = new Set([norm(name), norm(stripHash(name.trim()))]);
  for (const c of [...candidates]) candidates.add(stripExt(c));
  for (const profile of effective.values()) {
    const names = [profile.id, profile.title, ...profile.aliases];
    const unet = profile.files.unet;
    if (unet) names.push(unet, stripExt(unet));
    if (names.some((n) => candidates.has(norm(n)))) return profile;
  }
  return undefined;
}

/** Ids for "unknown model" errors: the image models (A1111 routes) or the video models. */
export function knownModelNames(scope: 'image' | 'video' = 'image'): string[] {
  return (scope === 'video' ? listVideoProfiles() : listImageProfiles()).map((p) => p.id);
}

/**
 * What a profile must satisfy to be served: a family with a graph builder that renders every kind it
 * claims, files only for roles that builder reads, an engine that can run it, a video block exactly when it
 * renders video. Checked for every built-in profile when the registry loads and for every profile added at
 * run time.
 */
export function checkProfile(p: ModelProfile): void {
  const builder = familyBuilder(p.family);
  const where = `model profile ${p.id}`;
  for (const kind of p.kinds) {
    if (!familyBuilds(builder, kind)) throw new Error(`${where}: family ${p.family} does not render ${kind}`);
  }
  for (const role of Object.keys(p.files)) {
    if (!builder.fileRoles.includes(role)) {
      throw new Error(`${where}: files.${role}: unknown file role (family ${p.family} reads ${builder.fileRoles.join(', ')})`);
    }
  }
  checkProfileEngine(p, where);
  if (p.kinds.includes('video') !== (p.video !== undefined)) {
    throw new Error(`${where}: a video model needs a video block, an image model must not have one`);
  }
  for (const task of p.video?.tasks ?? []) {
    if (!builder.video?.tasks.some((t) => t.id === task)) {
      throw new Error(`${where}: video task ${task} is not one family ${p.family} renders`);
    }
  }
}

/**
 * Adds a profile at run time, as if it were a file in `profiles/` (operator overrides apply to it too).
 * Throws when the id is taken or the profile fails `checkProfile`.
 */
export function registerProfile(profile: ModelProfile): void {
  if (baseProfiles().some((p) => p.id === profile.id)) throw new Error(`model profile ${profile.id} is already registered`);
  checkProfile(profile);
  added.set(profile.id, profile);
  effective = build(activeOverrides);
}

/** Removes a profile added with `registerProfile` (built-in profiles stay). */
export function unregisterProfile(id: string): void {
  if (added.delete(id)) effective = build(activeOverrides);
}

for (const p of BUILTIN_PROFILES) checkProfile(p);
