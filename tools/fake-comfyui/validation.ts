/**
 * The fake's emulation of ComfyUI's `execution.validate_prompt` / `validate_inputs` (v0.33), written from
 * the real server's behaviour and the recorded answers in test/fixtures/real-comfyui, against the recorded
 * `/object_info`. It is deliberately independent of the client's pre-submit checks (src/comfyui): the
 * conformance and verdict tests only mean something if the two can disagree.
 *
 * Reproduced as the real server does it:
 * - validation per output node, depth first through links with a `visiting` path, so a dependency cycle is
 *   reported on every member with the path `a (ImageScale) -> b (ImageScale) -> a (ImageScale)`;
 * - an exception while following a link (missing node, bad slot) is blamed on the linked node, with the
 *   *linking* input's name and config;
 * - `input_config` is always `[type, extra_info]` (`["IMAGE", {}]`), `null` for combos over 20 options;
 * - converted values are written back into the prompt (`"48"` → `48`, `{"__value__": x}` → `x`), which is
 *   what gets queued and shown in `/queue` and `/history`;
 * - inputs a custom validator takes (LoadImage's `image`) skip the min/max/combo checks;
 * - nodes that fail only because something upstream failed are not listed in `node_errors`.
 * Python raises outside the guarded parts (a non-object node, a non-iterable prompt) become HTTP 500.
 */
import type { InputSpec, RawNodeInfo, RawObjectInfo } from './node-schema.ts';
import { finalizedInputs, isObject, isOutputNode, outputTypes, specOptions } from './node-schema.ts';
import { PyError, pyBool, pyEq, pyFloat, pyInt, pyLess, pyNum, pyRepr, pyStr, pyTupleIndex } from './py.ts';

export interface ErrorDetail {
  type: string;
  message: string;
  details: string;
  extra_info: Record<string, unknown>;
}

export interface NodeErrors {
  errors: ErrorDetail[];
  dependent_outputs: string[];
  class_type: unknown;
}

export type PromptVerdict =
  { ok: true; outputs: string[]; nodeErrors: Record<string, NodeErrors> } | { ok: false; error: ErrorDetail; nodeErrors: Record<string, NodeErrors> };

export interface ValidationEnv {
  objectInfo: RawObjectInfo;
  /** `folder_paths.exists_annotated_filepath` for LoadImage-style references. */
  fileExists(ref: string): boolean;
}

/** A Python exception that escapes validation: the route answers 500. */
export class ValidationCrash extends PyError {}

type Result = [valid: boolean, errors: ErrorDetail[], nodeId: string];
type Node = { class_type: unknown; inputs?: unknown; _meta?: unknown };

/** Node classes whose `VALIDATE_INPUTS` takes these inputs (so they skip the generic value checks). */
const CUSTOM_VALIDATORS: Record<string, { inputs: string[]; check(env: ValidationEnv, value: unknown): true | string }> = {
  LoadImage: { inputs: ['image'], check: (env, v) => (env.fileExists(pyStr(v)) ? true : `Invalid image file: ${pyStr(v)}`) },
  LoadImageMask: { inputs: ['image'], check: (env, v) => (env.fileExists(pyStr(v)) ? true : `Invalid image file: ${pyStr(v)}`) },
};

/** `traceback.format_tb` stand-in: one entry per frame the real traceback has, source lines omitted. */
function frames(...where: Array<[number, string]>): string[] {
  return where.map(([line, fn]) => `  File "/opt/ComfyUI/execution.py", line ${line}, in ${fn}\n`);
}

function titleOf(node: Node): unknown {
  if (node._meta === undefined) return undefined;
  if (!isObject(node._meta)) throw new ValidationCrash('AttributeError', `'${typeof node._meta}' object has no attribute 'get'`);
  return node._meta.title;
}

export function validatePrompt(prompt: unknown, env: ValidationEnv, partialTargets: unknown): PromptVerdict {
  const fail = (error: ErrorDetail): PromptVerdict => ({ ok: false, error, nodeErrors: {} });
  const noOutputs = { type: 'prompt_no_outputs', message: 'Prompt has no outputs', details: '', extra_info: {} };
  if (!isObject(prompt)) {
    if ((typeof prompt === 'string' || Array.isArray(prompt)) && prompt.length === 0) return fail(noOutputs);
    throw new ValidationCrash('TypeError', 'prompt is not a dict');
  }
  const targets = partialTargets === undefined || partialTargets === null ? null : Array.isArray(partialTargets) ? partialTargets : null;

  const outputs: string[] = [];
  for (const [id, raw] of Object.entries(prompt)) {
    if (!isObject(raw)) throw new ValidationCrash('TypeError', 'node is not a dict');
    const node = raw as Node;
    if (!('class_type' in node)) {
      const title = titleOf(node);
      return fail({
        type: 'missing_node_type',
        message: `Node '${pyBool(title) ? pyStr(title) : `ID #${id}`}' has no class_type. The workflow may be corrupted or a custom node is missing.`,
        details: `Node ID '#${id}'`,
        extra_info: { node_id: id, class_type: null, node_title: title ?? null },
      });
    }
    const cls = node.class_type;
    if (Array.isArray(cls) || isObject(cls)) throw new ValidationCrash('TypeError', `unhashable type: '${Array.isArray(cls) ? 'list' : 'dict'}'`);
    const info = typeof cls === 'string' && Object.hasOwn(env.objectInfo, cls) ? env.objectInfo[cls] : undefined;
    if (!info) {
      const title = node._meta === undefined || !Object.hasOwn(node._meta as object, 'title') ? cls : titleOf(node);
      return fail({
        type: 'missing_node_type',
        message: `Node '${pyStr(title)}' not found. The custom node may not be installed.`,
        details: `Node ID '#${id}'`,
        extra_info: { node_id: id, class_type: cls, node_title: title },
      });
    }
    if (isOutputNode(info) && (targets === null || targets.some((t) => pyEq(t, id)))) outputs.push(id);
  }
  if (outputs.length === 0) return fail(noOutputs);

  const v = new Validator(prompt as Record<string, Node>, env);
  const good: string[] = [];
  const failed: Array<[string, ErrorDetail[]]> = [];
  const nodeErrors: Record<string, NodeErrors> = {};
  for (const o of outputs) {
    let result: Result;
    try {
      result = v.validateInputs(o, []);
    } catch (err) {
      const ex = asPyError(err);
      result = [
        false,
        [
          {
            type: 'exception_during_validation',
            message: 'Exception when validating node',
            details: ex.message,
            extra_info: { exception_type: ex.type, traceback: frames([1158, 'validate_prompt'], [870, 'validate_inputs']) },
          },
        ],
        o,
      ];
      v.validated.set(o, result);
    }
    if (result[0]) {
      good.push(o);
      continue;
    }
    failed.push([o, result[1]]);
    for (const [nodeId, [ok, reasons]] of v.validated) {
      if (ok || reasons.length === 0) continue;
      nodeErrors[nodeId] ??= { errors: reasons, dependent_outputs: [], class_type: (prompt[nodeId] as Node).class_type };
      nodeErrors[nodeId].dependent_outputs.push(o);
    }
  }
  if (good.length === 0) {
    const details = failed.flatMap(([, errs]) => errs.map((e) => `${e.message}: ${e.details}`)).join('\n');
    return { ok: false, error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details, extra_info: {} }, nodeErrors };
  }
  return { ok: true, outputs: good, nodeErrors };
}

function asPyError(err: unknown): PyError {
  if (err instanceof PyError) return err;
  return new PyError('Exception', err instanceof Error ? err.message : String(err));
}

class Validator {
  readonly validated = new Map<string, Result>();

  constructor(
    private readonly prompt: Record<string, Node>,
    private readonly env: ValidationEnv,
  ) {}

  private infoOf(id: unknown): [Node, RawNodeInfo] {
    if (typeof id !== 'string' || !Object.hasOwn(this.prompt, id)) throw new PyError('KeyError', pyRepr(id));
    const node = this.prompt[id] as Node;
    return [node, this.env.objectInfo[node.class_type as string] as RawNodeInfo];
  }

  // eslint-disable-next-line max-lines-per-function -- ComfyUI's input validation of one node, rule by rule as in its execution.py, held to the recordings
  validateInputs(id: string, visiting: string[]): Result {
    const done = this.validated.get(id);
    if (done) return done;
    if (visiting.includes(id)) return this.cycle(id, visiting);

    const [node, info] = this.infoOf(id);
    if (!isObject(node.inputs)) throw new PyError('KeyError', "'inputs'");
    const inputs = node.inputs;
    const classType = node.class_type as string;
    const custom = CUSTOM_VALIDATORS[classType];
    const { inputs: declared, dynamic } = finalizedInputs(info, inputs);
    const errors: ErrorDetail[] = [];
    let valid = true;

    for (const [x, { spec, category }] of declared) {
      const inputType = spec[0];
      const extra = specOptions(spec);
      const config = [inputType, extra];
      if (!Object.hasOwn(inputs, x)) {
        if (category === 'required') {
          errors.push({
            type: 'required_input_missing',
            message: 'Required input is missing',
            details: dynamic ? (x.split('.').at(-1) as string) : x,
            extra_info: { input_name: x },
          });
        }
        continue;
      }
      let val = inputs[x];
      if (Array.isArray(val)) {
        if (val.length !== 2) {
          errors.push({
            type: 'bad_linked_input',
            message: 'Bad linked input, must be a length-2 list of [node_id, slot_index]',
            details: x,
            extra_info: { input_name: x, input_config: config, received_value: val },
          });
          continue;
        }
        const [, srcInfo] = this.infoOf(val[0]);
        const received = pyTupleIndex(outputTypes(srcInfo), val[1]);
        if (!typesMatch(received, inputType)) {
          errors.push({
            type: 'return_type_mismatch',
            message: 'Return type mismatch between linked nodes',
            details: `${x}, received_type(${pyStr(received)}) mismatch input_type(${pyStr(inputType)})`,
            extra_info: { input_name: x, input_config: config, received_type: received, linked_node: val },
          });
          continue;
        }
        const srcId = val[0] as string;
        try {
          if (!this.validateInputs(srcId, [...visiting, id])[0]) valid = false;
        } catch (err) {
          const ex = asPyError(err);
          valid = false;
          this.validated.set(srcId, [
            false,
            [
              {
                type: 'exception_during_inner_validation',
                message: 'Exception when validating inner node',
                details: ex.message,
                extra_info: {
                  input_name: x,
                  input_config: config,
                  exception_message: ex.message,
                  exception_type: ex.type,
                  traceback: frames([955, 'validate_inputs'], [933, 'validate_inputs']),
                  linked_node: val,
                },
              },
            ],
            srcId,
          ]);
        }
        continue;
      }

      try {
        if (isObject(val) && Object.hasOwn(val, '__value__')) {
          val = val.__value__;
          inputs[x] = val;
        }
        if (inputType === 'INT') val = pyInt(val);
        else if (inputType === 'FLOAT') val = pyFloat(val);
        else if (inputType === 'STRING') val = pyStr(val);
        else if (inputType === 'BOOLEAN') val = pyBool(val);
        inputs[x] = val;
      } catch (err) {
        const ex = asPyError(err);
        errors.push({
          type: 'invalid_input_type',
          message: `Failed to convert an input value to a ${pyStr(inputType)} value`,
          details: `${x}, ${pyStr(val)}, ${ex.message}`,
          extra_info: { input_name: x, input_config: config, received_value: val, exception_message: ex.message },
        });
        continue;
      }
      if (custom?.inputs.includes(x)) continue;

      const isFloat = inputType === 'FLOAT';
      const show = (n: unknown) => (typeof n === 'number' ? pyNum(n, isFloat) : pyStr(n));
      if ('min' in extra && pyLess(val, extra.min)) {
        errors.push({
          type: 'value_smaller_than_min',
          message: `Value ${show(val)} smaller than min of ${show(extra.min)}`,
          details: x,
          extra_info: { input_name: x, input_config: config, received_value: val },
        });
        continue;
      }
      if ('max' in extra && pyLess(extra.max, val)) {
        errors.push({
          type: 'value_bigger_than_max',
          message: `Value ${show(val)} bigger than max of ${show(extra.max)}`,
          details: x,
          extra_info: { input_name: x, input_config: config, received_value: val },
        });
        continue;
      }
      const options = Array.isArray(inputType) ? inputType : inputType === 'COMBO' ? (Array.isArray(extra.options) ? extra.options : []) : undefined;
      if (options) {
        const candidates = extra.multiselect === true && Array.isArray(val) ? val : [val];
        const invalid = candidates.filter((c) => !options.some((o) => pyEq(o, c)));
        if (invalid.length > 0) {
          const long = options.length > 20;
          errors.push({
            type: 'value_not_in_list',
            message: 'Value not in list',
            details: `${x}: ${invalid.map(pyRepr).join(', ')} not in ${long ? `(list of length ${options.length})` : pyRepr(options)}`,
            extra_info: { input_name: x, input_config: long ? null : config, received_value: val },
          });
          continue;
        }
      }
    }

    if (custom) {
      for (const x of custom.inputs) {
        // A linked value is not resolved during validation, so the validator never sees it.
        if (!Object.hasOwn(inputs, x) || Array.isArray(inputs[x])) continue;
        const r = custom.check(this.env, inputs[x]);
        if (r !== true)
          errors.push({
            type: 'custom_validation_failed',
            message: 'Custom validation failed for node',
            details: `${x} - ${r}`,
            extra_info: { input_name: x },
          });
      }
    }

    // A cycle found deeper down may already have put errors on this node: join them.
    const prior = this.validated.get(id) ?? [true, [], id];
    const merged = [...prior[1], ...errors.filter((e) => !prior[1].some((p) => pyEq(p, e)))];
    const result: Result = [prior[0] && valid && errors.length === 0, merged, id];
    this.validated.set(id, result);
    return result;
  }

  private cycle(id: string, visiting: string[]): Result {
    const path = [...visiting.slice(visiting.indexOf(id)), id];
    const members = [...new Set(path)];
    const details = path.map((n) => `${n} (${pyStr(this.prompt[n]?.class_type)})`).join(' -> ');
    for (const n of members) {
      this.validated.set(n, [
        false,
        [{ type: 'dependency_cycle', message: 'Dependency cycle detected', details, extra_info: { node_id: n, cycle_nodes: members } }],
        n,
      ]);
    }
    return this.validated.get(id) as Result;
  }
}

/** `comfy_execution.validation.validate_node_input` (non-strict), with the V3 wildcards. */
export function typesMatch(received: unknown, wanted: unknown): boolean {
  if (pyEq(received, wanted)) return true;
  const wild = new Set(['*', 'COMFY_MATCHTYPE_V3']);
  if ((typeof received === 'string' && wild.has(received)) || (typeof wanted === 'string' && wild.has(wanted))) return true;
  if (Array.isArray(received) && wanted === 'COMBO') return true;
  if (typeof received !== 'string' || typeof wanted !== 'string') return false;
  const a = new Set(received.split(',').map((t) => t.trim()));
  const b = new Set(wanted.split(',').map((t) => t.trim()));
  if (a.has('*') || b.has('*')) return true;
  for (const t of a) if (b.has(t)) return true;
  return false;
}

export type { InputSpec };
