/**
 * sd-webui-controlnet's API on txt2img and img2img: `alwayson_scripts.controlnet.args[]` units (the extension's
 * `ControlNetUnit` fields, as its own API tests and webuiapi send them) mapped to neutral control units. What the
 * extension's fields mean here:
 * - `enabled` (default false, as in the extension): a disabled unit is skipped.
 * - `image` (or its old name `input_image`): base64 or a data URL, a `{image, mask}` object, an `[image, mask]`
 *   pair, or a list of one such object; on img2img a unit without an image takes the init image, as in the
 *   extension. A mask is taken and named in the warnings (not applied).
 * - `module`: `none`, `canny`, `invert` (the hint's preprocessor), every `ip-adapter*` module (an image prompt), and
 *   the preprocessor nodes the live ComfyUI offers (src/models/preprocessors.ts: comfyui_controlnet_aux's
 *   `depth_anything`, `lineart_realistic`, `dw_openpose_full`, ... with `processor_res` as their `resolution`).
 * - `model`: an `ip-adapter` or `redux` model is an image prompt; otherwise its name (or the module, or
 *   `union_control_type`) picks the union control type by keyword, else `auto`.
 * - `weight` → strength; `guidance_start` / `guidance_end` (old name `guidance`) → the step range;
 *   `threshold_a` / `threshold_b` → Canny's thresholds on the extension's 0..255 scale (out of 1..255: its defaults).
 * - `control_mode`, `resize_mode` (numbers or names), `processor_res`, `pixel_perfect`: checked, and named in the
 *   warnings when the value asks for what is not applied.
 */
import { z } from 'zod';
import type { ImageSource } from '../../images/image-set.ts';
import type { ControlPreprocessor, PreprocessorNodeUse, UnionControlType } from '../../contracts/render.ts';
import type { PreprocessorNode } from '../../models/preprocessors.ts';
import type { NeutralControl } from '../../request/neutral.ts';
import { requestErrorFromIssues } from '../../errors/request-error.ts';
import { RequestError, describeValue } from './errors.ts';
import { laxBool, laxFloat, laxInt, laxStr } from './schema.ts';

/** The most enabled units one request may carry (reported as the extension's `control_net_unit_count`). */
export const MAX_CONTROL_UNITS = 4;

/** Preprocessor modules applied here (ComfyUI core nodes), and the image-prompt modules this service runs. */
export const PREPROCESSOR_MODULES: readonly ControlPreprocessor[] = ['none', 'canny', 'invert'];
export const IMAGE_PROMPT_MODULES = ['ip-adapter-auto', 'ip-adapter_clip_sd15', 'ip-adapter_clip_sdxl', 'ip-adapter_clip_sdxl_plus_vith'] as const;
export const AVAILABLE_MODULES: readonly string[] = [...PREPROCESSOR_MODULES, ...IMAGE_PROMPT_MODULES];

/** The extension's label of `invert`, which it accepts as a module name too. */
const INVERT_LABEL = 'invert (from white bg & black line)';

/** The extension's Canny slider defaults and range (0..255); ComfyUI's Canny takes 0.01..0.99. */
const CANNY_DEFAULTS = { low: 100, high: 200 } as const;

export const CONTROL_MODES = ['Balanced', 'My prompt is more important', 'ControlNet is more important'] as const;
export const RESIZE_MODES = ['Just Resize', 'Crop and Resize', 'Resize and Fill'] as const;
/** The extension's older resize mode names. */
const RESIZE_MODE_ALIASES: Readonly<Record<string, (typeof RESIZE_MODES)[number]>> = {
  'Inner Fit (Scale to Fit)': 'Crop and Resize',
  'Outer Fit (Shrink to Fit)': 'Resize and Fill',
  'Scale to Fit (Inner Fit)': 'Crop and Resize',
  'Envelope (Outer Fit)': 'Resize and Fill',
  'Just Resize (Latent upscale)': 'Just Resize',
};

/** Keywords of model names, union control types and modules → the union ControlNet's type; first match wins. */
const CONTROL_TYPE_KEYWORDS: ReadonlyArray<readonly [RegExp, UnionControlType]> = [
  [/pose/, 'openpose'],
  [/depth/, 'depth'],
  [/canny|lineart|mlsd|hard.?edge|invert/, 'canny/lineart/anime_lineart/mlsd'],
  [/scribble|soft.?edge|hed|pidi|sketch|teed/, 'hed/pidi/scribble/ted'],
  [/normal/, 'normal'],
  [/seg/, 'segment'],
  [/tile|blur/, 'tile'],
  [/inpaint|repaint/, 'repaint'],
];

const unitSchema = z.object({
  enabled: laxBool(),
  module: laxStr(),
  model: laxStr(),
  weight: laxFloat(),
  image: z.unknown().optional(),
  input_image: z.unknown().optional(),
  mask: z.unknown().optional(),
  mask_image: z.unknown().optional(),
  resize_mode: z.unknown().optional(),
  control_mode: z.unknown().optional(),
  processor_res: laxInt(),
  threshold_a: laxFloat(),
  threshold_b: laxFloat(),
  guidance_start: laxFloat(),
  guidance_end: laxFloat(),
  guidance: laxFloat(),
  pixel_perfect: laxBool(),
  union_control_type: laxStr(),
});
type UnitBody = z.infer<typeof unitSchema>;

/** The key of the ControlNet script in `alwayson_scripts` (A1111 matches script titles case-insensitively). */
export function controlNetScriptKey(scripts: Record<string, unknown> | undefined): string | undefined {
  return Object.keys(scripts ?? {}).find((k) => k.toLowerCase() === 'controlnet');
}

/**
 * The enabled units of `alwayson_scripts.<ControlNet>.args` as neutral controls; `init` is the img2img init
 * image a unit without its own image takes. Unit problems are 422s naming the unit's field.
 */
export function chooseControls(
  scripts: Record<string, unknown> | undefined,
  init: ImageSource | undefined,
  warnings: string[],
  live: readonly PreprocessorNode[] = [],
): NeutralControl[] {
  const key = controlNetScriptKey(scripts);
  if (key === undefined) return [];
  const base = `alwayson_scripts.${key}`;
  const script = scripts![key];
  if (script === null || script === undefined) return [];
  if (typeof script !== 'object' || Array.isArray(script))
    throw new RequestError(422, base, `${base}: expected an object with "args", got ${describeValue(script)}`);
  const args = (script as Record<string, unknown>).args;
  if (args === undefined || args === null) return [];
  if (!Array.isArray(args)) throw new RequestError(422, `${base}.args`, `${base}.args: expected a list of units, got ${describeValue(args)}`);
  const controls: NeutralControl[] = [];
  args.forEach((arg, i) => {
    const field = `${base}.args.${i}`;
    if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) {
      // The extension skips script arguments that are not units.
      warnings.push(`${field}: not a ControlNet unit (${describeValue(arg)}); skipped`);
      return;
    }
    const unit = parseUnit(arg as Record<string, unknown>, field);
    if (unit.enabled !== true) return;
    controls.push(toControl(unit, field, init, warnings, live));
  });
  if (controls.length > MAX_CONTROL_UNITS) {
    throw new RequestError(422, `${base}.args`, `${base}.args: ${controls.length} enabled units; at most ${MAX_CONTROL_UNITS} per request`, {
      limit: MAX_CONTROL_UNITS,
    });
  }
  return controls;
}

function parseUnit(arg: Record<string, unknown>, field: string): UnitBody {
  const parsed = unitSchema.safeParse(arg);
  if (!parsed.success) throw requestErrorFromIssues(parsed.error.issues, { status: 422, pathPrefix: field.split('.'), value: arg });
  return parsed.data;
}

function toControl(u: UnitBody, field: string, init: ImageSource | undefined, warnings: string[], live: readonly PreprocessorNode[]): NeutralControl {
  const chosen = chooseModule(u, field, live);
  const module = typeof chosen === 'string' ? chosen : 'node';
  const node = typeof chosen === 'string' ? undefined : nodeUse(chosen, u.processor_res);
  const source = chooseUnitImage(u, field, init, warnings);
  const strength = inRange(u.weight ?? 1, 0, 2, `${field}.weight`);
  const { start, end } = chooseStepRange(u, field);
  const controlMode = chooseNamedMode(u.control_mode, CONTROL_MODES, {}, `${field}.control_mode`);
  const resizeMode = chooseNamedMode(u.resize_mode, RESIZE_MODES, RESIZE_MODE_ALIASES, `${field}.resize_mode`, { 3: 'Just Resize' });
  if (controlMode !== undefined && controlMode !== 'Balanced') {
    warnings.push(`${field}.control_mode: "${controlMode}" not applied; the unit applies as "Balanced"`);
  }
  const names = {
    unit: field,
    start: `${field}.guidance_start`,
    end: `${field}.${u.guidance !== undefined && u.guidance_end === undefined ? 'guidance' : 'guidance_end'}`,
  };
  if (module === 'image-prompt' || isImagePromptModel(u.model)) {
    if (start !== 0 || end !== 1) warnings.push(`${field}.guidance_start/guidance_end: not applied; an image prompt applies to every step`);
    warnings.push(
      `${field}: runs as an image prompt with the model's own image-prompt adapter (module "${u.module ?? 'none'}", model "${u.model ?? 'None'}" not loaded)`,
    );
    return { unit: { kind: 'image-prompt', strength }, source, names };
  }
  if (resizeMode !== undefined && resizeMode !== 'Crop and Resize') {
    warnings.push(`${field}.resize_mode: "${resizeMode}" not applied; the hint is scaled and centre-cropped to the render size ("Crop and Resize")`);
  }
  preprocessorResolutionWarnings(u, module, field, warnings);
  return {
    unit: {
      kind: 'controlnet',
      preprocessor: module,
      ...(module === 'canny' ? { canny: cannyThresholds(u) } : {}),
      ...(node ? { node } : {}),
      controlType: chooseControlType(u, node ? node.module : module),
      strength,
      start,
      end,
    },
    source,
    names,
  };
}

/** The unit's preprocessor (a core one, or a node the live ComfyUI has), or `image-prompt` for the IP-Adapter modules. */
function chooseModule(u: UnitBody, field: string, live: readonly PreprocessorNode[]): Exclude<ControlPreprocessor, 'node'> | 'image-prompt' | PreprocessorNode {
  const asked = (u.module ?? 'none').trim().toLowerCase();
  if (asked === '' || asked === 'none') return 'none';
  if (asked === 'canny') return 'canny';
  if (asked === 'invert' || asked === INVERT_LABEL) return 'invert';
  if (asked.startsWith('ip-adapter')) return 'image-prompt';
  const node = findPreprocessorNode(u.module ?? '', live);
  if (node) return node;
  const f = `${field}.module`;
  const available = [...AVAILABLE_MODULES, ...live.map((n) => n.module)];
  throw new RequestError(422, f, `${f}: module "${u.module}" is not available; available modules: ${available.join(', ')} (and any ip-adapter* module)`, {
    available,
  });
}

/** Whether a module is one of this service's own (core preprocessors, image prompts): no live node needed. */
export function isCoreModule(module: unknown): boolean {
  if (typeof module !== 'string') return true;
  const m = module.trim().toLowerCase();
  return m === '' || m === 'none' || m === 'canny' || m === 'invert' || m === INVERT_LABEL || m.startsWith('ip-adapter');
}

/** Whether some ControlNet unit of `scripts` names a module only a live preprocessor node can run (the front then asks ComfyUI). */
export function needsLivePreprocessors(scripts: unknown): boolean {
  if (scripts === null || typeof scripts !== 'object' || Array.isArray(scripts)) return false;
  const key = controlNetScriptKey(scripts as Record<string, unknown>);
  const args = key === undefined ? undefined : ((scripts as Record<string, unknown>)[key] as { args?: unknown } | null)?.args;
  return Array.isArray(args) && args.some((a) => a !== null && typeof a === 'object' && !isCoreModule((a as Record<string, unknown>).module));
}

/** A late-bound preprocessor by module name (case-insensitive) or node class name. */
export function findPreprocessorNode(asked: string, live: readonly PreprocessorNode[]): PreprocessorNode | undefined {
  const a = asked.trim().toLowerCase();
  return live.find((n) => n.module.toLowerCase() === a) ?? live.find((n) => n.classType.toLowerCase() === a);
}

/** The extension's default preprocessor resolution (its `Resolution` slider); -1 or absent means it. */
export const DEFAULT_PROCESSOR_RES = 512;

/** How a live node runs: its `resolution` input from processor_res (64..16384 as comfyui_controlnet_aux takes it). */
export function nodeUse(node: PreprocessorNode, processorRes: number | undefined): PreprocessorNodeUse {
  const res = processorRes !== undefined && processorRes > 0 ? Math.min(16_384, Math.max(64, Math.round(processorRes))) : DEFAULT_PROCESSOR_RES;
  return { module: node.module, classType: node.classType, ...(node.resolution ? { resolution: res } : {}) };
}

function isImagePromptModel(model: string | undefined): boolean {
  return model !== undefined && /ip[-_]?adapter|redux/i.test(model);
}

/** `model`, then `union_control_type`, then the module by keyword; `auto` (the union model decides) when none says. */
/** `module`: the core preprocessor's name or a live node's module name (`depth_anything` says depth). */
function chooseControlType(u: UnitBody, module: string): UnionControlType {
  for (const text of [u.model, u.union_control_type, module === 'none' ? undefined : module]) {
    if (!text) continue;
    const lower = text.toLowerCase();
    const hit = CONTROL_TYPE_KEYWORDS.find(([re]) => re.test(lower));
    if (hit) return hit[1];
  }
  return 'auto';
}

/** `image` (or `input_image`) in the extension's forms; on img2img the init image when the unit has none. */
function chooseUnitImage(u: UnitBody, field: string, init: ImageSource | undefined, warnings: string[]): ImageSource {
  if (u.image !== undefined && u.image !== null && u.input_image !== undefined && u.input_image !== null) {
    throw new RequestError(422, `${field}.input_image`, `${field}.input_image: send either image or input_image (its old name), not both`);
  }
  const imageField = u.image !== undefined && u.image !== null ? 'image' : 'input_image';
  const raw = u.image ?? u.input_image;
  const { image, mask, path, maskPath } = unpackImage(raw, `${field}.${imageField}`);
  const unitMask = u.mask ?? u.mask_image;
  if (present(mask) || present(unitMask)) {
    const f = present(mask) ? maskPath : `${field}.${u.mask !== undefined && u.mask !== null ? 'mask' : 'mask_image'}`;
    warnings.push(`${f}: a ControlNet mask is not applied; the whole hint is used`);
  }
  if (present(image)) return { field: path, value: image };
  if (init) return init;
  const f = `${field}.image`;
  throw new RequestError(422, f, `${f}: the unit is enabled but has no image`);
}

const present = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** The image and mask of the extension's image forms, with the field the image came from. */
function unpackImage(raw: unknown, field: string): { image?: string; mask?: string; path: string; maskPath?: string } {
  if (raw === undefined || raw === null || raw === '') return { path: field };
  if (typeof raw === 'string') return { image: raw, path: field };
  if (Array.isArray(raw)) {
    if (raw.length === 1 && raw[0] !== null && typeof raw[0] === 'object') return unpackImage(raw[0], `${field}.0`);
    if (raw.length === 2 && raw.every((v) => typeof v === 'string')) return { image: raw[0], mask: raw[1], path: `${field}.0`, maskPath: `${field}.1` };
    throw new RequestError(422, field, `${field}: expected an image, {image, mask}, or [image, mask]; one image per unit is supported`);
  }
  if (typeof raw === 'object') {
    const o = raw as Record<string, unknown>;
    if (o.image !== undefined && typeof o.image !== 'string')
      throw new RequestError(422, `${field}.image`, `${field}.image: expected a base64 image, got ${describeValue(o.image)}`);
    if (o.mask !== undefined && o.mask !== null && typeof o.mask !== 'string') {
      throw new RequestError(422, `${field}.mask`, `${field}.mask: expected a base64 image, got ${describeValue(o.mask)}`);
    }
    return {
      ...(typeof o.image === 'string' ? { image: o.image } : {}),
      ...(typeof o.mask === 'string' ? { mask: o.mask } : {}),
      path: `${field}.image`,
      maskPath: `${field}.mask`,
    };
  }
  throw new RequestError(422, field, `${field}: expected a base64 image, got ${describeValue(raw)}`);
}

function chooseStepRange(u: UnitBody, field: string): { start: number; end: number } {
  if (u.guidance !== undefined && u.guidance_end !== undefined) {
    throw new RequestError(422, `${field}.guidance`, `${field}.guidance: send either guidance_end or guidance (its old name), not both`);
  }
  const start = inRange(u.guidance_start ?? 0, 0, 1, `${field}.guidance_start`);
  const endField = u.guidance_end === undefined && u.guidance !== undefined ? 'guidance' : 'guidance_end';
  const end = inRange(u.guidance_end ?? u.guidance ?? 1, 0, 1, `${field}.${endField}`);
  if (start > end) throw new RequestError(422, `${field}.guidance_start`, `${field}.guidance_start: ${start} is after ${endField} ${end}`);
  return { start, end };
}

function inRange(v: number, min: number, max: number, field: string): number {
  if (v < min || v > max) throw new RequestError(422, field, `${field}: must be between ${min} and ${max}, got ${v}`);
  return v;
}

/** A mode sent as its index or its name (the extension's enums), or undefined when not sent. */
function chooseNamedMode<T extends string>(
  v: unknown,
  names: readonly T[],
  aliases: Readonly<Record<string, T>>,
  field: string,
  extraIndices: Readonly<Record<number, T>> = {},
): T | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isInteger(v)) {
    const byIndex = names[v] ?? extraIndices[v];
    if (byIndex !== undefined) return byIndex;
  }
  if (typeof v === 'string') {
    const byName = names.find((n) => n.toLowerCase() === v.trim().toLowerCase()) ?? aliases[v.trim()];
    if (byName !== undefined) return byName;
    if (/^\d$/.test(v.trim())) return chooseNamedMode(Number(v.trim()), names, aliases, field, extraIndices);
  }
  const choices = names.map((n, i) => `${i} ("${n}")`).join(', ');
  throw new RequestError(422, field, `${field}: ${describeValue(v)} is not one of ${choices}`);
}

/** The extension's thresholds (0..255; outside 1..255 its defaults) on ComfyUI's Canny scale (0.01..0.99). */
export function cannyThresholds(u: { threshold_a?: number | undefined; threshold_b?: number | undefined }): { low: number; high: number } {
  const pick = (v: number | undefined, d: number) => (v === undefined || v < 1 || v > 255 ? d : v);
  const a = pick(u.threshold_a, CANNY_DEFAULTS.low);
  const b = pick(u.threshold_b, CANNY_DEFAULTS.high);
  // OpenCV's Canny (the extension's) swaps thresholds given the wrong way round.
  const [low, high] = a <= b ? [a, b] : [b, a];
  const scale = (t: number) => Math.min(0.99, Math.max(0.01, Math.round((t / 255) * 100) / 100));
  return { low: scale(low), high: scale(high) };
}

/** The extension runs canny at `processor_res` (or the render size with `pixel_perfect`); ComfyUI's Canny runs at the image's size. */
function preprocessorResolutionWarnings(u: UnitBody, module: ControlPreprocessor, field: string, warnings: string[]): void {
  if (module !== 'canny') return;
  if (u.pixel_perfect === true) warnings.push(`${field}.pixel_perfect: not applied; the preprocessor runs at the image's own size`);
  else if (u.processor_res !== undefined && u.processor_res > 0)
    warnings.push(`${field}.processor_res: not applied; the preprocessor runs at the image's own size`);
}

const UNIT_IMAGE_FIELDS = ['image', 'input_image', 'mask', 'mask_image'] as const;

/** `alwayson_scripts` for the answer's `parameters`: the ControlNet units' images left out (A1111 echoes no input image). */
export function alwaysOnScriptsEcho(scripts: unknown): unknown {
  if (scripts === null || typeof scripts !== 'object' || Array.isArray(scripts)) return scripts;
  const key = controlNetScriptKey(scripts as Record<string, unknown>);
  const script = key === undefined ? undefined : (scripts as Record<string, unknown>)[key];
  if (!script || typeof script !== 'object' || !Array.isArray((script as Record<string, unknown>).args)) return scripts;
  const args = ((script as Record<string, unknown>).args as unknown[]).map((arg) => {
    if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) return arg;
    const copy: Record<string, unknown> = { ...(arg as Record<string, unknown>) };
    for (const f of UNIT_IMAGE_FIELDS) if (copy[f] !== undefined) copy[f] = null;
    return copy;
  });
  return { ...(scripts as Record<string, unknown>), [key!]: { ...(script as Record<string, unknown>), args } };
}
