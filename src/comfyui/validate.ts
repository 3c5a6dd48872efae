/**
 * NOT USED BY THE CLIENT (it checks only definite facts: preflight.ts). Kept solely because the fake ComfyUI
 * (src/fake-comfyui/routes-core.ts) still answers `POST /prompt` with it; once the fake has its own validator
 * emulated from the real recording (branch fake-conformance), delete this file and test/unit/validate.test.ts.
 *
 * Graph validation with ComfyUI's own semantics (`execution.validate_prompt` / `validate_inputs`,
 * ref/comfyui-protocol.md §1.1), so that a graph is rejected here for exactly the reasons, and with the same
 * error shapes, that ComfyUI would reject it with. Used by the client before submitting and by the fake
 * ComfyUI to answer `POST /prompt`. Pure: no I/O; file existence comes in through `opts.fileExists`.
 *
 * Deliberate mirrors of ComfyUI quirks (a client must cope with the real server, so the fake must show them):
 * - Validation is per output node. When at least one output validates the result is `ok` and the invalid
 *   outputs are only reported in `nodeErrors` (ComfyUI answers HTTP 200 then).
 * - Nodes that are invalid only because an upstream node failed are not listed.
 * - `dependent_outputs` is filled from every failed node validated so far, as ComfyUI's loop does.
 * - `prompt_outputs_failed_validation.details` lists only the failing output nodes' *own* errors, so it is
 *   often empty when the real cause is upstream (the cause is in `nodeErrors`).
 * - Inputs not declared by the node are ignored; hidden inputs are never checked.
 * - Values are checked after Python-style conversion (`int("20")` passes, `int("2.5")` fails).
 * - Nodes with a `VALIDATE_INPUTS` (LoadImage, LoadImageMask) skip the min/max/combo checks of the inputs
 *   their validator takes, which is why any existing file path is accepted for `image`.
 */
import type { InputSpec, NodeInfo, ObjectInfo } from './object-info.ts';
import { inputOptions } from './object-info.ts';

export interface ComfyErrorDetail {
  type: string;
  message: string;
  details: string;
  extra_info: Record<string, unknown>;
}

export interface NodeError {
  errors: ComfyErrorDetail[];
  dependent_outputs: string[];
  class_type: string;
}

export type GraphValidation =
  | { ok: true; outputs: string[]; nodeErrors: Record<string, NodeError> }
  | { ok: false; error: ComfyErrorDetail; nodeErrors: Record<string, NodeError> };

export interface ValidateOptions {
  /**
   * Whether a LoadImage-style file reference exists (`"x.png"`, `"sub/x.png"`, `"x.png [output]"`).
   * Omitted: file existence is not checked (a client validating before upload cannot know).
   */
  fileExists?: (name: string) => boolean;
  /** `partial_execution_targets`: only these output node ids are executed (ids of non-output nodes are ignored). */
  partialExecutionTargets?: readonly string[] | null;
}

/** Node classes with a `VALIDATE_INPUTS`: the inputs it takes, and the check itself. */
interface CustomValidator {
  inputs: readonly string[];
  validate(values: Record<string, unknown>, opts: ValidateOptions): true | string;
}

const imageFileValidator: CustomValidator = {
  inputs: ['image'],
  validate(values, opts) {
    if (!opts.fileExists) return true;
    const image = values.image;
    const name = typeof image === 'string' ? image : pyStr(image);
    return opts.fileExists(name) ? true : `Invalid image file: ${name}`;
  },
};

const CUSTOM_VALIDATORS: Record<string, CustomValidator> = {
  LoadImage: imageFileValidator,
  LoadImageMask: imageFileValidator,
};

/** Python exception raised inside validation; becomes `exception_during_(inner_)validation`. */
class PyException extends Error {
  constructor(
    readonly pyType: string,
    message: string,
  ) {
    super(message);
  }
}

type Validated = [valid: boolean, reasons: ComfyErrorDetail[], nodeId: string];

type RawNode = { class_type?: unknown; inputs?: unknown; _meta?: unknown };

export function validateGraph(graph: unknown, objectInfo: ObjectInfo, opts: ValidateOptions = {}): GraphValidation {
  if (!isPlainObject(graph)) {
    return {
      ok: false,
      error: {
        type: 'invalid_prompt',
        message: 'Invalid prompt',
        details: 'The prompt must be an object of nodes keyed by node id',
        extra_info: {},
      },
      nodeErrors: {},
    };
  }
  const prompt = graph as Record<string, unknown>;

  const outputs: string[] = [];
  for (const [id, raw] of Object.entries(prompt)) {
    const node = isPlainObject(raw) ? (raw as RawNode) : undefined;
    const title = nodeTitle(node);
    if (!node || !('class_type' in node)) {
      return {
        ok: false,
        error: {
          type: 'missing_node_type',
          message: `Node '${title ?? `ID #${id}`}' has no class_type. The workflow may be corrupted or a custom node is missing.`,
          details: `Node ID '#${id}'`,
          extra_info: { node_id: id, class_type: null, node_title: title ?? null },
        },
        nodeErrors: {},
      };
    }
    const classType = node.class_type;
    const info = typeof classType === 'string' && Object.hasOwn(objectInfo, classType) ? objectInfo[classType] : undefined;
    if (!info) {
      const shownTitle = title ?? pyStr(classType);
      return {
        ok: false,
        error: {
          type: 'missing_node_type',
          message: `Node '${shownTitle}' not found. The custom node may not be installed.`,
          details: `Node ID '#${id}'`,
          extra_info: { node_id: id, class_type: classType, node_title: shownTitle },
        },
        nodeErrors: {},
      };
    }
    if (info.output_node === true) {
      if (opts.partialExecutionTargets == null || opts.partialExecutionTargets.includes(id)) outputs.push(id);
    }
  }

  if (outputs.length === 0) {
    return {
      ok: false,
      error: { type: 'prompt_no_outputs', message: 'Prompt has no outputs', details: '', extra_info: {} },
      nodeErrors: {},
    };
  }

  const cycles = findCycles(prompt);
  const validated = new Map<string, Validated>();
  const ctx: Ctx = { prompt, objectInfo, opts, validated, cycles };

  const goodOutputs: string[] = [];
  const failed: Array<[string, ComfyErrorDetail[]]> = [];
  const nodeErrors: Record<string, NodeError> = {};
  for (const o of outputs) {
    let valid: boolean;
    let reasons: ComfyErrorDetail[];
    try {
      [valid, reasons] = validateInputs(ctx, o);
    } catch (err) {
      const ex = toPyException(err);
      valid = false;
      reasons = [
        {
          type: 'exception_during_validation',
          message: 'Exception when validating node',
          details: ex.message,
          extra_info: { exception_type: ex.pyType, traceback: [] },
        },
      ];
      validated.set(o, [false, reasons, o]);
    }
    if (valid) {
      goodOutputs.push(o);
      continue;
    }
    failed.push([o, reasons]);
    for (const [nodeId, [ok, nodeReasons]] of validated) {
      if (ok || nodeReasons.length === 0) continue;
      let entry = nodeErrors[nodeId];
      if (!entry) {
        entry = { errors: nodeReasons, dependent_outputs: [], class_type: String((prompt[nodeId] as RawNode).class_type) };
        nodeErrors[nodeId] = entry;
      }
      entry.dependent_outputs.push(o);
    }
  }

  if (goodOutputs.length === 0) {
    const lines: string[] = [];
    for (const [, errs] of failed) for (const e of errs) lines.push(`${e.message}: ${e.details}`);
    return {
      ok: false,
      error: {
        type: 'prompt_outputs_failed_validation',
        message: 'Prompt outputs failed validation',
        details: lines.join('\n'),
        extra_info: {},
      },
      nodeErrors,
    };
  }
  return { ok: true, outputs: goodOutputs, nodeErrors };
}

interface Ctx {
  prompt: Record<string, unknown>;
  objectInfo: ObjectInfo;
  opts: ValidateOptions;
  validated: Map<string, Validated>;
  /** node id → the cycle (strongly connected component) it belongs to. */
  cycles: Map<string, string[]>;
}

function validateInputs(ctx: Ctx, id: string): Validated {
  const done = ctx.validated.get(id);
  if (done) return done;

  const node = ctx.prompt[id] as RawNode;
  const cycle = ctx.cycles.get(id);
  if (cycle) {
    // Without this check the recursion below would never end (older ComfyUI died with a RecursionError).
    // Every member of the cycle gets the error, so the response names all nodes to rewire.
    for (const member of cycle) {
      ctx.validated.set(member, [
        false,
        [
          {
            type: 'dependency_cycle',
            message: 'Dependency cycle detected',
            details: `Node ${member} is part of a dependency cycle among nodes ${cycle.join(', ')}`,
            extra_info: { cycle_nodes: cycle },
          },
        ],
        member,
      ]);
    }
    return ctx.validated.get(id) as Validated;
  }

  if (!isPlainObject(node.inputs)) throw new PyException('KeyError', "'inputs'");
  const inputs = node.inputs as Record<string, unknown>;
  const classType = node.class_type as string;
  const info = ctx.objectInfo[classType] as NodeInfo;
  const custom = CUSTOM_VALIDATORS[classType];
  const customInputs = new Set(custom?.inputs ?? []);

  const errors: ComfyErrorDetail[] = [];
  let valid = true;
  const customValues: Record<string, unknown> = {};

  for (const [name, spec, category] of declaredInputs(info)) {
    if (!Object.hasOwn(inputs, name)) {
      // A missing DynamicCombo (e.g. SaveVideo `codec` on v0.30-v0.33) passes validation in ComfyUI and only
      // fails when the node executes.
      if (category === 'required' && specType(spec) !== 'COMFY_DYNAMICCOMBO_V3') {
        errors.push({
          type: 'required_input_missing',
          message: 'Required input is missing',
          details: name,
          extra_info: { input_name: name },
        });
      }
      continue;
    }
    let val = inputs[name];
    const inputType = specType(spec);

    if (Array.isArray(val)) {
      if (val.length !== 2) {
        errors.push({
          type: 'bad_linked_input',
          message: 'Bad linked input, must be a length-2 list of [node_id, slot_index]',
          details: name,
          extra_info: { input_name: name, input_config: spec, received_value: val },
        });
        continue;
      }
      const [srcId, slot] = val as [unknown, unknown];
      const src = typeof srcId === 'string' && Object.hasOwn(ctx.prompt, srcId) ? (ctx.prompt[srcId] as RawNode) : undefined;
      if (!src) throw new PyException('KeyError', pyRepr(srcId));
      const srcInfo = ctx.objectInfo[src.class_type as string] as NodeInfo;
      const receivedType = pyIndex(srcInfo.output, slot);
      if (!validateNodeInput(receivedType, inputType)) {
        errors.push({
          type: 'return_type_mismatch',
          message: 'Return type mismatch between linked nodes',
          details: `${name}, received_type(${pyStr(receivedType)}) mismatch input_type(${pyStr(inputType)})`,
          extra_info: { input_name: name, input_config: spec, received_type: receivedType, linked_node: val },
        });
        continue;
      }
      try {
        const r = validateInputs(ctx, srcId as string);
        if (!r[0]) valid = false;
      } catch (err) {
        const ex = toPyException(err);
        valid = false;
        const reasons: ComfyErrorDetail[] = [
          {
            type: 'exception_during_inner_validation',
            message: 'Exception when validating inner node',
            details: ex.message,
            extra_info: {
              input_name: name,
              input_config: spec,
              exception_message: ex.message,
              exception_type: ex.pyType,
              traceback: [],
              linked_node: val,
            },
          },
        ];
        ctx.validated.set(srcId as string, [false, reasons, srcId as string]);
      }
      continue;
    }

    // `{"__value__": [...]}` is how a literal list travels (a bare list would be a link).
    if (isPlainObject(val) && Object.hasOwn(val as object, '__value__')) val = (val as { __value__: unknown }).__value__;

    try {
      if (inputType === 'INT') val = pyInt(val);
      else if (inputType === 'FLOAT') val = pyFloat(val);
      else if (inputType === 'STRING') val = pyStr(val);
      else if (inputType === 'BOOLEAN') val = pyBool(val);
    } catch (err) {
      const ex = toPyException(err);
      errors.push({
        type: 'invalid_input_type',
        message: `Failed to convert an input value to a ${pyStr(inputType)} value`,
        details: `${name}, ${pyStr(val)}, ${ex.message}`,
        extra_info: { input_name: name, input_config: spec, received_value: val, exception_message: ex.message },
      });
      continue;
    }

    if (customInputs.has(name)) {
      customValues[name] = val;
      continue;
    }

    const extra = inputOptions(spec);
    const fmt = (v: unknown) => (inputType === 'FLOAT' && typeof v === 'number' ? pyFloatRepr(v) : pyStr(v));
    if (typeof extra.min === 'number' && typeof val === 'number' && val < extra.min) {
      errors.push({
        type: 'value_smaller_than_min',
        message: `Value ${fmt(val)} smaller than min of ${fmt(extra.min)}`,
        details: name,
        extra_info: { input_name: name, input_config: spec, received_value: val },
      });
      continue;
    }
    if (typeof extra.max === 'number' && typeof val === 'number' && val > extra.max) {
      errors.push({
        type: 'value_bigger_than_max',
        message: `Value ${fmt(val)} bigger than max of ${fmt(extra.max)}`,
        details: name,
        extra_info: { input_name: name, input_config: spec, received_value: val },
      });
      continue;
    }

    const options = allowedValues(spec);
    if (options && !options.some((o) => pyEq(o, val))) {
      const long = options.length > 20;
      errors.push({
        type: 'value_not_in_list',
        message: 'Value not in list',
        details: `${name}: '${pyStr(val)}' not in ${long ? `(list of length ${options.length})` : pyRepr(options)}`,
        extra_info: { input_name: name, input_config: long ? null : spec, received_value: val },
      });
      continue;
    }
  }

  if (custom) {
    for (const name of custom.inputs) {
      if (!Object.hasOwn(customValues, name)) continue;
      const r = custom.validate(customValues, ctx.opts);
      if (r !== true) {
        errors.push({
          type: 'custom_validation_failed',
          message: 'Custom validation failed for node',
          details: `${name} - ${r}`,
          extra_info: { input_name: name },
        });
      }
    }
  }

  const ret: Validated = errors.length > 0 || !valid ? [false, errors, id] : [true, [], id];
  ctx.validated.set(id, ret);
  return ret;
}

/** Required then optional inputs, in the node's declared order. */
function declaredInputs(info: NodeInfo): Array<[string, InputSpec, 'required' | 'optional']> {
  const out: Array<[string, InputSpec, 'required' | 'optional']> = [];
  for (const category of ['required', 'optional'] as const) {
    const specs = info.input[category];
    if (!specs) continue;
    const order = info.input_order?.[category] ?? Object.keys(specs);
    const names = [...order.filter((n) => Object.hasOwn(specs, n)), ...Object.keys(specs).filter((n) => !order.includes(n))];
    for (const name of names) out.push([name, specs[name] as InputSpec, category]);
  }
  return out;
}

/**
 * The spec's type as ComfyUI compares it: the options list itself for V1 combos (so a link into a V1 combo
 * never type-checks, as in ComfyUI), otherwise the type name (`COMBO` for V3 combos).
 */
function specType(spec: InputSpec): unknown {
  return spec[0];
}

/** Allowed values for combo-like inputs: V1 list, V3 `COMBO` options, or DynamicCombo option keys. */
function allowedValues(spec: InputSpec): unknown[] | undefined {
  const [head] = spec;
  if (Array.isArray(head)) return head;
  const opts = inputOptions(spec);
  if (head === 'COMBO') return Array.isArray(opts.options) ? opts.options : [];
  if (head === 'COMFY_DYNAMICCOMBO_V3' && Array.isArray(opts.options)) {
    return opts.options.map((o) => (isPlainObject(o) ? (o as { key?: unknown }).key : o));
  }
  return undefined;
}

/** `comfy_execution.validation.validate_node_input` (non-strict). */
export function validateNodeInput(receivedType: unknown, inputType: unknown): boolean {
  if (receivedType === inputType) return true;
  if (Array.isArray(receivedType) && Array.isArray(inputType)) {
    return receivedType.length === inputType.length && receivedType.every((v, i) => pyEq(v, inputType[i]));
  }
  if (typeof receivedType !== 'string' || typeof inputType !== 'string') return false;
  const received = new Set(receivedType.split(',').map((t) => t.trim()));
  const wanted = new Set(inputType.split(',').map((t) => t.trim()));
  if (received.has('*') || wanted.has('*')) return true;
  for (const t of received) if (wanted.has(t)) return true;
  return false;
}

/**
 * Strongly connected components with a cycle, over links between existing nodes (Tarjan). Computed up
 * front so the recursive validation can report a cycle instead of recursing forever.
 */
function findCycles(prompt: Record<string, unknown>): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const [id, raw] of Object.entries(prompt)) {
    const deps: string[] = [];
    const inputs = isPlainObject(raw) ? (raw as RawNode).inputs : undefined;
    if (isPlainObject(inputs)) {
      for (const v of Object.values(inputs as Record<string, unknown>)) {
        if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && Object.hasOwn(prompt, v[0])) deps.push(v[0]);
      }
    }
    edges.set(id, deps);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const result = new Map<string, string[]>();
  let counter = 0;

  // Iterative Tarjan: graphs are small, but recursion depth should not depend on user input.
  for (const start of edges.keys()) {
    if (index.has(start)) continue;
    const work: Array<[string, number]> = [[start, 0]];
    while (work.length > 0) {
      const frame = work[work.length - 1] as [string, number];
      const [v, i] = frame;
      if (i === 0 && !index.has(v)) {
        index.set(v, counter);
        low.set(v, counter);
        counter++;
        stack.push(v);
        onStack.add(v);
      }
      const deps = edges.get(v) ?? [];
      if (i < deps.length) {
        frame[1] = i + 1;
        const w = deps[i] as string;
        if (!index.has(w)) work.push([w, 0]);
        else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent[0], Math.min(low.get(parent[0]) as number, low.get(v) as number));
      if (low.get(v) === index.get(v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop() as string;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        if (comp.length > 1 || (edges.get(v) ?? []).includes(v)) {
          comp.reverse();
          for (const n of comp) result.set(n, comp);
        }
      }
    }
  }
  return result;
}

function nodeTitle(node: RawNode | undefined): string | undefined {
  const meta = node?._meta;
  if (isPlainObject(meta)) {
    const t = (meta as { title?: unknown }).title;
    if (typeof t === 'string') return t;
  }
  return undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function toPyException(err: unknown): PyException {
  if (err instanceof PyException) return err;
  return new PyException(err instanceof Error ? err.name : 'Exception', err instanceof Error ? err.message : String(err));
}

/** `seq[i]` with Python's semantics for negative, non-integer and out-of-range indices. */
function pyIndex(seq: readonly unknown[], i: unknown): unknown {
  if (typeof i === 'boolean') i = i ? 1 : 0;
  if (typeof i !== 'number' || !Number.isInteger(i)) {
    throw new PyException('TypeError', `tuple indices must be integers or slices, not ${pyTypeName(i)}`);
  }
  const k = i < 0 ? seq.length + i : i;
  if (k < 0 || k >= seq.length) throw new PyException('IndexError', 'tuple index out of range');
  return seq[k];
}

// ---------------------------------------------------------------------------------------------------------
// Python value semantics, so conversions and messages read like ComfyUI's.

function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

function pyInt(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') {
    if (Number.isNaN(v)) throw new PyException('ValueError', 'cannot convert float NaN to integer');
    if (!Number.isFinite(v)) throw new PyException('OverflowError', 'cannot convert float infinity to integer');
    return Math.trunc(v);
  }
  if (typeof v === 'string') {
    const s = v.trim();
    if (/^[+-]?\d+(_\d+)*$/.test(s)) return Number(s.replaceAll('_', ''));
    throw new PyException('ValueError', `invalid literal for int() with base 10: ${pyRepr(v)}`);
  }
  throw new PyException('TypeError', `int() argument must be a string, a bytes-like object or a real number, not '${pyTypeName(v)}'`);
}

function pyFloat(v: unknown): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const s = v.trim();
    const m = /^([+-]?)(inf|infinity|nan)$/i.exec(s);
    if (m) return m[2]?.toLowerCase() === 'nan' ? NaN : m[1] === '-' ? -Infinity : Infinity;
    if (/^[+-]?((\d+(_\d+)*)(\.(\d+(_\d+)*)?)?|\.\d+(_\d+)*)([eE][+-]?\d+(_\d+)*)?$/.test(s) && s !== '' && s !== '+' && s !== '-') {
      return Number(s.replaceAll('_', ''));
    }
    throw new PyException('ValueError', `could not convert string to float: ${pyRepr(v)}`);
  }
  throw new PyException('TypeError', `float() argument must be a string or a real number, not '${pyTypeName(v)}'`);
}

function pyBool(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === 'string') return v.length > 0;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.length > 0;
  return Object.keys(v as object).length > 0;
}

/** Python `==` for JSON values (`1 == 1.0 == True`). */
function pyEq(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const num = (x: unknown) => (typeof x === 'boolean' ? (x ? 1 : 0) : x);
  const na = num(a);
  const nb = num(b);
  if (typeof na === 'number' && typeof nb === 'number') return na === nb;
  return false;
}

/** Python `repr(float)`: shortest round-trip digits, exponent form outside 1e-4 <= |x| < 1e16. */
function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, expStr] = x.toExponential().split('e') as [string, string];
  const exp = Number(expStr);
  if (exp < -4 || exp >= 16) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  // Within this range JS prints the same shortest digits in positional form.
  const s = String(x);
  return s.includes('.') ? s : `${s}.0`;
}

/** Python `str()` of a JSON value. */
function pyStr(v: unknown): string {
  if (typeof v === 'string') return v;
  return pyRepr(v);
}

/** Python `repr()` of a JSON value (`['a', 'b']`, `{'k': 1}`, `True`, `None`). */
export function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 1e16 ? String(v) : pyFloatRepr(v);
  if (typeof v === 'string') {
    const quote = v.includes("'") && !v.includes('"') ? '"' : "'";
    let out = '';
    for (const ch of v) {
      if (ch === '\\') out += '\\\\';
      else if (ch === quote) out += `\\${quote}`;
      else if (ch === '\n') out += '\\n';
      else if (ch === '\r') out += '\\r';
      else if (ch === '\t') out += '\\t';
      else if ((ch.codePointAt(0) as number) < 0x20 || ch === '\x7f') out += `\\x${(ch.codePointAt(0) as number).toString(16).padStart(2, '0')}`;
      else out += ch;
    }
    return quote + out + quote;
  }
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(v as object)
    .map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`)
    .join(', ')}}`;
}
