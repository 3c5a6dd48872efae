/**
 * The client's own check before `POST /prompt`. ComfyUI decides whether a graph is valid: its answer is the
 * authority, and its `node_errors` reach the caller. This check only fails fast on definite, named facts read
 * from the backend's `/object_info`, each one a reason for which ComfyUI itself refuses the prompt:
 *
 * - a node class that is absent (or a node without `class_type`): ComfyUI refuses the whole prompt with
 *   `missing_node_type`, whatever the node is connected to;
 * - a model file that is not in its loader's list: ComfyUI reports `value_not_in_list` for that input. It
 *   validates per output node and queues the valid outputs (HTTP 200 + node_errors), so the graph is refused
 *   here only when every output node depends on such a loader.
 *
 * Everything else (types, ranges, links, cycles, input files) is left to ComfyUI: re-implementing its
 * validation made the client refuse graphs the real server accepts. Pure: no I/O.
 */
import type { InputSpec, ObjectInfo } from './object-info.ts';
import { inputOptions, inputSpec } from './object-info.ts';
import { missingNodeExplanation } from './plugins.ts';

export interface PreflightProblem {
  /** ComfyUI's error type for the same fact. */
  type: 'missing_node_type' | 'value_not_in_list';
  nodeId: string;
  /** null when the node has no `class_type`. */
  classType: string | null;
  /** For a missing model file: the loader input and the file asked for. */
  input?: string;
  value?: string;
  message: string;
}

/** `{type, message, details, extra_info}` as ComfyUI shapes its errors, so callers handle one shape. */
export interface PreflightError {
  type: string;
  message: string;
  details: string;
  extra_info: Record<string, unknown>;
}

export type Preflight =
  | { ok: true }
  | {
      ok: false;
      problems: PreflightProblem[];
      error: PreflightError;
      nodeErrors: Record<string, { errors: PreflightError[]; dependent_outputs: string[]; class_type: string }>;
    };

/** File name endings of model weights (ComfyUI's `supported_pt_extensions` plus GGUF). */
const MODEL_FILE = /\.(safetensors|sft|gguf|ckpt|pt|pt2|pth|bin|pkl|onnx)$/i;

type RawNode = { class_type?: unknown; inputs?: unknown; _meta?: unknown };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function preflightGraph(graph: unknown, objectInfo: ObjectInfo): Preflight {
  // Not a graph at all: ComfyUI says why in its own words.
  if (!isRecord(graph)) return { ok: true };

  const missing = missingNodeClasses(graph, objectInfo);
  if (missing.length > 0) {
    const first = missing[0] as PreflightProblem;
    const title = nodeTitle(graph[first.nodeId]) ?? first.classType ?? `ID #${first.nodeId}`;
    return {
      ok: false,
      problems: missing,
      error: {
        type: 'missing_node_type',
        message: first.message,
        details: `Node ID '#${first.nodeId}'`,
        extra_info: { node_id: first.nodeId, class_type: first.classType, node_title: title },
      },
      nodeErrors: {},
    };
  }

  const outputs = Object.keys(graph).filter((id) => objectInfo[(graph[id] as RawNode).class_type as string]?.output_node === true);
  if (outputs.length === 0) return { ok: true };

  const fileProblems = new Map<string, PreflightProblem[]>();
  const dependents = new Map<string, string[]>();
  let doomed = 0;
  for (const output of outputs) {
    let failed = false;
    for (const id of upstreamOf(graph, objectInfo, output)) {
      let problems = fileProblems.get(id);
      if (!problems) {
        problems = missingModelFilesOf(id, graph[id] as RawNode, objectInfo);
        fileProblems.set(id, problems);
      }
      if (problems.length === 0) continue;
      failed = true;
      dependents.set(id, [...(dependents.get(id) ?? []), output]);
    }
    if (failed) doomed++;
  }
  // Some output does not depend on a missing file: ComfyUI would queue it.
  if (doomed < outputs.length) return { ok: true };

  const problems: PreflightProblem[] = [];
  const nodeErrors: Extract<Preflight, { ok: false }>['nodeErrors'] = {};
  for (const [id, list] of fileProblems) {
    if (list.length === 0) continue;
    problems.push(...list);
    nodeErrors[id] = {
      errors: list.map((p) => ({
        type: 'value_not_in_list',
        message: 'Value not in list',
        details: p.message,
        extra_info: { input_name: p.input, received_value: p.value },
      })),
      dependent_outputs: dependents.get(id) ?? [],
      class_type: list[0]?.classType ?? '',
    };
  }
  return {
    ok: false,
    problems,
    error: {
      type: 'prompt_outputs_failed_validation',
      message: 'Prompt outputs failed validation',
      details: problems.map((p) => p.message).join('\n'),
      extra_info: {},
    },
    nodeErrors,
  };
}

/** Every node, connected or not, must name an installed class (ComfyUI checks them all before validating). */
export function missingNodeClasses(graph: Record<string, unknown>, objectInfo: ObjectInfo): PreflightProblem[] {
  const out: PreflightProblem[] = [];
  for (const [id, raw] of Object.entries(graph)) {
    const node = isRecord(raw) ? (raw as RawNode) : undefined;
    const title = nodeTitle(node);
    if (!node || !('class_type' in node)) {
      out.push({ type: 'missing_node_type', nodeId: id, classType: null, message: `Node '${title ?? `ID #${id}`}' has no class_type` });
      continue;
    }
    const cls = node.class_type;
    if (typeof cls === 'string' && Object.hasOwn(objectInfo, cls)) continue;
    const name = typeof cls === 'string' ? cls : JSON.stringify(cls);
    // A node of a known custom-node package says which package and why it is most likely absent.
    const why = missingNodeExplanation(typeof cls === 'string' ? cls : null);
    out.push({
      type: 'missing_node_type',
      nodeId: id,
      classType: typeof cls === 'string' ? cls : null,
      message: `Node '${title ?? name}' (${name}) is not installed on this ComfyUI${why ? `: ${why}` : ''}`,
    });
  }
  return out;
}

/**
 * Every literal model file of the graph's nodes that is not in its loader's list, connected to an output or
 * not (what an operator must install; `preflightGraph` decides whether ComfyUI would refuse for it).
 */
export function missingModelFiles(graph: Record<string, unknown>, objectInfo: ObjectInfo): PreflightProblem[] {
  return Object.entries(graph).flatMap(([id, node]) => (isRecord(node) ? missingModelFilesOf(id, node as RawNode, objectInfo) : []));
}

/**
 * The output node and every node it reaches through links of declared inputs, as ComfyUI's validation walks
 * them (links of undeclared inputs are never followed; links to absent nodes are ComfyUI's to report).
 */
function upstreamOf(graph: Record<string, unknown>, objectInfo: ObjectInfo, output: string): string[] {
  const seen = new Set<string>();
  const stack = [output];
  while (stack.length > 0) {
    const id = stack.pop() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    const node = graph[id] as RawNode;
    const info = objectInfo[node.class_type as string];
    if (!info || !isRecord(node.inputs)) continue;
    for (const [name, value] of Object.entries(node.inputs)) {
      if (!inputSpec(info, name)) continue;
      if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && Object.hasOwn(graph, value[0])) {
        stack.push(value[0]);
      }
    }
  }
  return [...seen];
}

/** Literal model-file values of combo inputs that are not among the combo's values. */
function missingModelFilesOf(id: string, node: RawNode, objectInfo: ObjectInfo): PreflightProblem[] {
  const cls = node.class_type as string;
  const info = objectInfo[cls];
  if (!info || !isRecord(node.inputs)) return [];
  const out: PreflightProblem[] = [];
  for (const [name, value] of Object.entries(node.inputs)) {
    if (typeof value !== 'string' || !MODEL_FILE.test(value)) continue;
    const spec = inputSpec(info, name);
    const files = spec ? fileList(spec) : undefined;
    if (!files || files.includes(value)) continue;
    out.push({
      type: 'value_not_in_list',
      nodeId: id,
      classType: cls,
      input: name,
      value,
      message: `${name}: model file '${value}' is not in ${cls}'s list on this ComfyUI`,
    });
  }
  return out;
}

/**
 * The values of a plain combo (V1 list or V3 `COMBO`). Upload-backed combos (LoadImage and friends) are
 * left out: those nodes validate the file themselves and accept names the list does not show.
 */
function fileList(spec: InputSpec): unknown[] | undefined {
  const opts = inputOptions(spec);
  if (Object.keys(opts).some((k) => k.endsWith('_upload')) || opts.remote !== undefined) return undefined;
  if (Array.isArray(spec[0])) return spec[0] as unknown[];
  if (spec[0] === 'COMBO' && Array.isArray(opts.options)) return opts.options as unknown[];
  return undefined;
}

function nodeTitle(node: unknown): string | undefined {
  const meta = isRecord(node) ? node._meta : undefined;
  const title = isRecord(meta) ? meta.title : undefined;
  return typeof title === 'string' ? title : undefined;
}
