/**
 * The fake's own reading of `/object_info` node entries, kept verbatim as recorded from the real server (so
 * `display_name: null`, unknown keys and V3 shapes pass through untouched), plus what ComfyUI derives from a
 * node's input spec at validation and execution time: `get_input_info` and, for V3 nodes, the finalized
 * inputs of `_io.get_finalized_class_inputs` (DynamicCombo options selected by the live value, Autogrow slots
 * expanded), which turn nested inputs into dot paths such as `format.codec`.
 */

/** `[type, options?]`: type is a string (`INT`, `COMBO`, `COMFY_DYNAMICCOMBO_V3`, ...) or a V1 option list. */
export type InputSpec = readonly unknown[];

export interface RawInputs {
  required?: Record<string, InputSpec>;
  optional?: Record<string, InputSpec>;
  hidden?: Record<string, unknown>;
  [k: string]: unknown;
}

export interface RawNodeInfo {
  input?: RawInputs;
  input_order?: Record<string, readonly string[]>;
  output?: readonly unknown[];
  output_node?: unknown;
  [k: string]: unknown;
}

/** What `GET /object_info` answers: node class → entry, exactly as recorded. */
export type RawObjectInfo = Record<string, RawNodeInfo>;

export type InputCategory = 'required' | 'optional';

const DYNAMIC_COMBO = 'COMFY_DYNAMICCOMBO_V3';
const AUTOGROW = 'COMFY_AUTOGROW_V3';
const DYNAMIC_SLOT = 'COMFY_DYNAMICSLOT_V3';
const DYNAMIC_TYPES = new Set([DYNAMIC_COMBO, AUTOGROW, DYNAMIC_SLOT]);

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The options dict of a spec (`extra_info`), `{}` when the spec has none. */
export function specOptions(spec: InputSpec): Record<string, unknown> {
  const o = spec[1];
  return isObject(o) ? o : {};
}

/** The node's declared output types (`RETURN_TYPES`). */
export function outputTypes(info: RawNodeInfo): readonly unknown[] {
  return Array.isArray(info.output) ? info.output : [];
}

export function isOutputNode(info: RawNodeInfo): boolean {
  return info.output_node === true;
}

export interface FinalizedInputs {
  /** Input name (dot path for nested dynamic inputs) → spec and category, in declaration order. */
  inputs: Map<string, { spec: InputSpec; category: InputCategory }>;
  /** True when dynamic inputs were expanded (ComfyUI's non-empty `v3_data`). */
  dynamic: boolean;
}

function categories(d: unknown): Array<[InputCategory, Record<string, InputSpec>]> {
  if (!isObject(d)) return [];
  const out: Array<[InputCategory, Record<string, InputSpec>]> = [];
  for (const [cat, inner] of Object.entries(d)) {
    if ((cat === 'required' || cat === 'optional') && isObject(inner)) out.push([cat, inner as Record<string, InputSpec>]);
  }
  return out;
}

const join = (prefix: string[], id?: string) => [...prefix, ...(id === undefined ? [] : [id])].join('.');

/**
 * The inputs validation and execution see for `live` (the node's inputs in the prompt). Plain nodes get their
 * declared inputs; dynamic inputs expand only as far as the live values select them, exactly like ComfyUI:
 * an absent or unknown DynamicCombo key drops that combo and everything below it.
 */
export function finalizedInputs(info: RawNodeInfo, live: Record<string, unknown>): FinalizedInputs {
  const inputs = new Map<string, { spec: InputSpec; category: InputCategory }>();
  let dynamic = false;
  const put = (cat: InputCategory, id: string, spec: InputSpec) => {
    // A later write keeps the first position, as a Python dict does.
    inputs.set(id, { spec, category: cat });
  };

  const parse = (dict: unknown, prefix: string[]) => {
    for (const [cat, inner] of categories(dict)) {
      for (const [id, spec] of Object.entries(inner)) {
        if (!Array.isArray(spec)) continue;
        const io: unknown = spec[0];
        if (typeof io === 'string' && DYNAMIC_TYPES.has(io)) {
          expand(io, spec, cat, [...prefix, id]);
        } else {
          put(cat, join(prefix, id), spec);
          if (prefix.length > 0) dynamic = true;
        }
      }
    }
  };

  const expand = (io: string, spec: InputSpec, cat: InputCategory, prefix: string[]) => {
    const id = join(prefix);
    const opts = specOptions(spec);
    if (io === DYNAMIC_COMBO) {
      if (!Object.hasOwn(live, id)) return;
      const options: unknown[] = Array.isArray(opts.options) ? opts.options : [];
      const selected = options.find((o) => isObject(o) && o.key === live[id]);
      if (!isObject(selected)) return;
      parse(selected.inputs, prefix);
      put(cat, id, spec);
      dynamic = true;
    } else if (io === DYNAMIC_SLOT) {
      if (!Object.hasOwn(live, id)) return;
      parse(opts.inputs, prefix);
      put(cat, id, spec);
      dynamic = true;
    } else {
      const template = isObject(opts.template) ? opts.template : {};
      let templateSpec: InputSpec | undefined;
      let templateRequired = true;
      for (const [c, inner] of categories(template.input)) {
        const first = Object.values(inner)[0];
        if (first === undefined) continue;
        templateSpec = first;
        templateRequired = c === 'required';
        break;
      }
      if (!templateSpec) return;
      const min = typeof template.min === 'number' ? template.min : 0;
      const names: string[] = Array.isArray(template.names)
        ? template.names.map(String)
        : Array.from(
            { length: typeof template.max === 'number' ? template.max : 0 },
            (_, i) => `${typeof template.prefix === 'string' ? template.prefix : ''}${i}`,
          );
      let anyLive = false;
      names.forEach((name, i) => {
        const eid = join(prefix, name);
        put(i < min && templateRequired ? 'required' : 'optional', eid, templateSpec);
        if (Object.hasOwn(live, eid)) anyLive = true;
      });
      // Present slots and the "nothing connected" default both count as dynamic paths.
      if (names.length > 0 || !anyLive) dynamic = true;
    }
  };

  parse(info.input, []);
  return { inputs, dynamic };
}

/** `get_input_info` for an input the node declares at top level (required, optional or hidden). */
export function declaredSpec(info: RawNodeInfo, name: string): InputSpec | undefined {
  for (const cat of ['required', 'optional', 'hidden'] as const) {
    const d = info.input?.[cat];
    if (isObject(d) && Object.hasOwn(d, name) && Array.isArray(d[name])) return d[name] as InputSpec;
  }
  return undefined;
}
