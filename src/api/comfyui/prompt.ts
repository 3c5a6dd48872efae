/**
 * `POST /prompt` read as ComfyUI reads it, into a `prompt` render (contracts/render.ts GraphSpec):
 * - `prompt` (the API-format graph), `client_id` (whose WebSocket gets the events), `prompt_id` (canonical
 *   lowercase UUID, else ComfyUI's `invalid_prompt_id`; absent: one is minted), `extra_data` (its `webhook`, a
 *   URL, gets a signed `prompt.completed` / `prompt.failed`; the rest is ComfyUI's and ignored), and `front` /
 *   `number` read as the render's priority: `front` first of all (1), a negative `number` ahead of the
 *   others (2), otherwise the default or the `X-Priority` header;
 * - what ComfyUI itself refuses, from definite facts in the live `/object_info` (preflight.ts: an unknown node
 *   class, a model file no loader lists; here also no output node and a required input missing), is refused in
 *   ComfyUI's own 400 shape before anything is stored or started. Everything else is ComfyUI's to judge when
 *   the render submits the graph (src/activities), and its verdict reaches the history and the WebSocket.
 */
import { randomUUID } from 'node:crypto';
import type { ComfyGraph, GraphNode } from '../../comfyui/graph.ts';
import { isLink } from '../../comfyui/graph.ts';
import type { ObjectInfo } from '../../comfyui/object-info.ts';
import { preflightGraph } from '../../comfyui/preflight.ts';
import { comfyError, type ComfyErrorBody } from './errors.ts';

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface PromptBody {
  graph: ComfyGraph;
  promptId: string;
  clientId?: string;
  number?: number;
  /** From `front` / `number`; undefined: the route's default. */
  priority?: number;
  /** `extra_data.webhook`: where a signed event goes when the prompt ends. */
  webhook?: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body's fields, or ComfyUI's 400 for a body it would refuse before looking at the graph. */
export function readPromptBody(body: unknown): PromptBody | ComfyErrorBody {
  if (!isRecord(body) || !('prompt' in body)) return comfyError('no_prompt', 'No prompt provided', 'No prompt provided');
  const { prompt } = body;
  if (!isRecord(prompt)) return comfyError('invalid_prompt', 'Invalid prompt', 'prompt must be an object of nodes');
  let promptId: string;
  if (body.prompt_id === undefined || body.prompt_id === null) promptId = randomUUID();
  else if (typeof body.prompt_id === 'string' && CANONICAL_UUID.test(body.prompt_id)) promptId = body.prompt_id;
  else
    return comfyError(
      'invalid_prompt_id',
      'prompt_id must be a valid UUID',
      'prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one',
    );
  const graph: ComfyGraph = {};
  for (const [id, node] of Object.entries(prompt)) {
    const n = isRecord(node) ? node : {};
    const inputs = isRecord(n.inputs) ? (n.inputs as GraphNode['inputs']) : {};
    const meta = isRecord(n._meta) && typeof n._meta.title === 'string' ? { title: n._meta.title } : undefined;
    graph[id] = { class_type: n.class_type as string, inputs, ...(meta ? { _meta: meta } : {}) } as GraphNode;
  }
  const webhook = isRecord(body.extra_data) ? body.extra_data.webhook : undefined;
  if (webhook !== undefined && webhook !== null && typeof webhook !== 'string')
    return comfyError('invalid_prompt', 'Invalid prompt', 'extra_data.webhook: a URL string');
  const number = typeof body.number === 'number' && Number.isFinite(body.number) ? body.number : undefined;
  const priority = body.front === true && number === undefined ? 1 : number !== undefined && number < 0 ? 2 : undefined;
  return {
    graph,
    promptId,
    ...(typeof body.client_id === 'string' && body.client_id !== '' ? { clientId: body.client_id } : {}),
    ...(number !== undefined ? { number } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(typeof webhook === 'string' && webhook !== '' ? { webhook } : {}),
  };
}

export type Verdict = { ok: true; nodeErrors: Record<string, unknown> } | { ok: false; body: ComfyErrorBody };

/**
 * What ComfyUI would refuse, from definite facts. `ok` may still carry `nodeErrors`: some outputs cannot run
 * but others can, which ComfyUI queues (HTTP 200 with `node_errors`).
 */
export function checkGraph(graph: ComfyGraph, nodes: ObjectInfo): Verdict {
  const pre = preflightGraph(graph, nodes);
  if (!pre.ok) return { ok: false, body: comfyError(pre.error.type, pre.error.message, pre.error.details, pre.error.extra_info, pre.nodeErrors) };
  const outputs = Object.keys(graph).filter((id) => nodes[graph[id]!.class_type]?.output_node === true);
  if (outputs.length === 0) return { ok: false, body: comfyError('prompt_no_outputs', 'Prompt has no outputs') };
  const nodeErrors: Record<string, { errors: unknown[]; dependent_outputs: string[]; class_type: string }> = {};
  let failed = 0;
  for (const out of outputs) {
    let bad = false;
    for (const id of upstream(graph, out)) {
      const missing = missingRequired(graph[id]!, nodes);
      if (missing.length === 0) continue;
      bad = true;
      const entry = (nodeErrors[id] ??= {
        errors: missing.map((name) => ({
          type: 'required_input_missing',
          message: 'Required input is missing',
          details: name,
          extra_info: { input_name: name },
        })),
        dependent_outputs: [],
        class_type: graph[id]!.class_type,
      });
      entry.dependent_outputs.push(out);
    }
    if (bad) failed++;
  }
  if (failed === outputs.length) {
    return { ok: false, body: comfyError('prompt_outputs_failed_validation', 'Prompt outputs failed validation', '', {}, nodeErrors) };
  }
  return { ok: true, nodeErrors };
}

/** The node and every node it reads from (links whose source exists). */
function upstream(graph: ComfyGraph, start: string): string[] {
  const seen = new Set<string>();
  const stack = [start];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (seen.has(id) || !graph[id]) continue;
    seen.add(id);
    for (const v of Object.values(graph[id].inputs)) if (isLink(v)) stack.push(v[0]);
  }
  return [...seen];
}

/** Required inputs the node lacks (a V3 dynamic combo's nested inputs are ComfyUI's to judge). */
function missingRequired(node: GraphNode, nodes: ObjectInfo): string[] {
  const required = nodes[node.class_type]?.input.required ?? {};
  return Object.keys(required).filter((name) => !(name in node.inputs));
}
