/**
 * `/object_info` as a real ComfyUI sends it (recorded: tools/fake-comfyui/fixtures/object_info.json).
 *
 * Only what the project acts on is read strictly: input names and specs (required / optional), combo values,
 * `input_order`, `output` and `output_node`. Everything else (display_name, description, category,
 * output_is_list, output_name, search_aliases, price_badge, output_matchtypes, and keys added by later
 * releases) is cosmetic and passed through untouched: the real 0.33.0 sends `display_name: null` on 160 V3
 * nodes and `output_is_list: [null]` on 8, and a schema that insisted on strings there dropped those nodes.
 *
 * A node class is never dropped. When even a used part cannot be read, that part is left out (an input
 * spec that is not a list, an `output` that is not a list, ...), the node still counts as present, and the
 * problem is returned so the caller can log it.
 *
 * Combo specs come in two shapes and both are read: V1 `[["a","b"], {opts}]` and V3
 * `["COMBO", {"options": [...]}]`; `COMFY_DYNAMICCOMBO_V3` lists `{key, inputs}` options.
 */
import { z } from 'zod';

/** `[type, options?]`: type is a name (`INT`, `MODEL`, `COMBO`, ...) or, for V1 combos, the value list. */
export type InputSpec = [unknown, ...unknown[]];

export interface NodeInputs {
  required?: Record<string, InputSpec>;
  optional?: Record<string, InputSpec>;
  /** Never validated by ComfyUI; passed through. */
  hidden?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface NodeInfo {
  /** The class name (the key, when the node's own `name` is missing). */
  name: string;
  input: NodeInputs;
  input_order?: { required?: string[]; optional?: string[] };
  /** Output types: names, or value lists for combo outputs. */
  output: unknown[];
  output_node: boolean;
  /** Cosmetic fields, verbatim (any shape, possibly null). */
  [key: string]: unknown;
}

export type ObjectInfo = Record<string, NodeInfo>;

/** One part of one node that could not be read, e.g. `{node: 'X', problem: 'input.required.foo: not a list'}`. */
export interface ObjectInfoProblem {
  node: string;
  problem: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Read one node's entry. Never fails: unreadable used parts are dropped and reported in `problems`. */
export function parseNodeInfo(className: string, raw: unknown, problems: string[] = []): NodeInfo {
  if (!isRecord(raw)) {
    problems.push('entry is not an object');
    return { name: className, input: {}, output: [], output_node: false };
  }
  const src = raw;

  const input: NodeInputs = {};
  if (isRecord(src.input)) {
    for (const [key, value] of Object.entries(src.input)) {
      if (key === 'required' || key === 'optional') {
        const specs = readSpecs(value, `input.${key}`, problems);
        if (specs) input[key] = specs;
      } else if (key !== 'hidden' || isRecord(value)) {
        input[key] = value;
      }
    }
  } else if (src.input !== undefined) {
    problems.push('input: not an object');
  }

  const info: NodeInfo = { ...src, name: typeof src.name === 'string' ? src.name : className, input, output: [], output_node: false };

  const order = readInputOrder(src.input_order, problems);
  if (order) info.input_order = order;
  else delete info.input_order;

  if (Array.isArray(src.output)) info.output = src.output;
  else problems.push('output: not a list');

  if (typeof src.output_node === 'boolean') info.output_node = src.output_node;
  else if (src.output_node !== undefined) problems.push('output_node: not a boolean');
  return info;
}

function readSpecs(value: unknown, where: string, problems: string[]): Record<string, InputSpec> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) {
    problems.push(`${where}: not an object`);
    return undefined;
  }
  const out: Record<string, InputSpec> = {};
  for (const [name, spec] of Object.entries(value)) {
    if (Array.isArray(spec) && spec.length > 0) out[name] = spec as InputSpec;
    else problems.push(`${where}.${name}: not a non-empty list`);
  }
  return out;
}

function readInputOrder(value: unknown, problems: string[]): NodeInfo['input_order'] {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) {
    problems.push('input_order: not an object');
    return undefined;
  }
  const out: NonNullable<NodeInfo['input_order']> = {};
  for (const key of ['required', 'optional'] as const) {
    const names = value[key];
    if (names === undefined) continue;
    if (Array.isArray(names) && names.every((n) => typeof n === 'string')) out[key] = names;
    else problems.push(`input_order.${key}: not a list of names`);
  }
  return out;
}

/**
 * Read a whole `/object_info` body (or `/object_info/{cls}`). Only a body that is not an object at all is
 * an error; every key becomes a node.
 */
export function parseObjectInfo(raw: unknown, onProblem?: (p: ObjectInfoProblem) => void): ObjectInfo {
  if (!isRecord(raw)) throw new TypeError('/object_info body is not an object');
  const out: ObjectInfo = {};
  for (const [name, entry] of Object.entries(raw)) {
    const problems: string[] = [];
    out[name] = parseNodeInfo(name, entry, problems);
    if (onProblem) for (const problem of problems) onProblem({ node: name, problem });
  }
  return out;
}

/** zod form of `parseObjectInfo`, for callers that parse files (fixture, tests). Problems are ignored. */
export const objectInfoSchema = z.record(z.string(), z.unknown()).transform((raw) => parseObjectInfo(raw));

/** The allowed values of a combo input (V1 list, V3 `COMBO`, `COMFY_DYNAMICCOMBO_V3` keys), or undefined. */
export function comboOptions(spec: InputSpec): unknown[] | undefined {
  const [head] = spec;
  if (Array.isArray(head)) return head as unknown[];
  const opts = inputOptions(spec);
  if (!Array.isArray(opts.options)) return undefined;
  const options = opts.options as unknown[];
  if (head === 'COMBO') return options;
  if (head === 'COMFY_DYNAMICCOMBO_V3') return options.map((o) => (isRecord(o) ? o.key : o));
  return undefined;
}

/** The declared type of an input (`INT`, `FLOAT`, `STRING`, `BOOLEAN`, `COMBO`, `MODEL`, ...). */
export function inputType(spec: InputSpec): string {
  const [head] = spec;
  if (Array.isArray(head)) return 'COMBO';
  return String(head);
}

/** Options object of a spec (`{default, min, max, step, ...}`), empty when absent. */
export function inputOptions(spec: InputSpec): Record<string, unknown> {
  const opts = spec[1];
  return isRecord(opts) ? opts : {};
}

/** The spec of a node input, required or optional. */
export function inputSpec(info: NodeInfo, name: string): InputSpec | undefined {
  return info.input.required?.[name] ?? info.input.optional?.[name];
}
