/**
 * Workflow files: an operator's API-format graph (`<name>.json`) beside a small manifest
 * (`<name>.manifest.json`) naming its parameters — type, default, limits, and the node inputs each one sets —
 * and its output nodes. Each becomes a typed endpoint (`POST /workflows/<name>`, src/api/workflow-files) whose
 * zod schema is built from the manifest, and is checked against a ComfyUI's `/object_info` (at start and by
 * `npm run contract`). Pure apart from reading the folder.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { ComfyGraph, InputValue } from '../comfyui/graph.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';

const target = z.object({ node: z.string().min(1), input: z.string().min(1) });
const scalar = z.union([z.string(), z.number(), z.boolean()]);

export const parameterSchema = z.strictObject({
  type: z.enum(['string', 'integer', 'number', 'boolean', 'image']),
  description: z.string().optional(),
  default: scalar.optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  maxLength: z.number().int().positive().optional(),
  enum: z
    .array(z.union([z.string(), z.number()]))
    .min(1)
    .optional(),
  /** The node inputs the value is written to (several: one prompt feeding two encoders, say). */
  sets: z.array(target).min(1),
});

export const manifestSchema = z.strictObject({
  description: z.string().min(1),
  parameters: z.record(z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'parameter names are snake_case'), parameterSchema),
  /** Output node ids whose files are the answer. */
  outputs: z.array(z.string().min(1)).min(1),
});

export type WorkflowParameter = z.infer<typeof parameterSchema>;
export type WorkflowManifest = z.infer<typeof manifestSchema>;

export interface WorkflowFile {
  name: string;
  graph: ComfyGraph;
  manifest: WorkflowManifest;
}

/** The repository's own workflows (`workflows/`), used when WORKFLOWS_DIR is unset. */
export const SHIPPED_WORKFLOWS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'workflows');

const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** Every `<name>.json` with a `<name>.manifest.json` beside it; a file that does not read is an error naming it. */
export function loadWorkflowFiles(dir: string): WorkflowFile[] {
  const out: WorkflowFile[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.manifest.json')) continue;
    const name = file.slice(0, -'.manifest.json'.length);
    if (!NAME.test(name)) throw new Error(`workflow file ${file}: the name must be lowercase letters, digits and dashes`);
    const manifest = manifestSchema.safeParse(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
    if (!manifest.success) throw new Error(`workflow file ${file}: ${manifest.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    const graph = JSON.parse(readFileSync(path.join(dir, `${name}.json`), 'utf8')) as ComfyGraph;
    const problems = structuralProblems(graph, manifest.data);
    if (problems.length > 0) throw new Error(`workflow ${name}: ${problems.join('; ')}`);
    out.push({ name, graph, manifest: manifest.data });
  }
  return out;
}

/** What the graph itself must satisfy: every target and output node exists. */
function structuralProblems(graph: ComfyGraph, m: WorkflowManifest): string[] {
  const problems: string[] = [];
  for (const [p, spec] of Object.entries(m.parameters)) {
    for (const t of spec.sets) if (!graph[t.node]) problems.push(`parameter ${p} sets node ${t.node}, which the graph lacks`);
    if (spec.default !== undefined && spec.enum && !spec.enum.includes(spec.default as string | number))
      problems.push(`parameter ${p}: default not in its enum`);
  }
  for (const o of m.outputs) if (!graph[o]) problems.push(`output node ${o} is not in the graph`);
  return problems;
}

/** Against a ComfyUI's `/object_info`: node classes present, every target input a real input of its node. */
export function checkWorkflow(wf: WorkflowFile, nodes: ObjectInfo): string[] {
  const problems: string[] = [];
  for (const [id, node] of Object.entries(wf.graph)) {
    if (!nodes[node.class_type]) problems.push(`node ${id}: class ${node.class_type} is not in /object_info`);
  }
  for (const [p, spec] of Object.entries(wf.manifest.parameters)) {
    for (const t of spec.sets) {
      const info = nodes[wf.graph[t.node]?.class_type ?? ''];
      if (!info) continue;
      const known = { ...info.input.required, ...info.input.optional };
      if (!(t.input in known)) problems.push(`parameter ${p}: ${wf.graph[t.node]!.class_type} (node ${t.node}) has no input ${t.input}`);
    }
  }
  for (const o of wf.manifest.outputs) {
    const info = nodes[wf.graph[o]?.class_type ?? ''];
    if (info && !info.output_node) problems.push(`output node ${o} (${wf.graph[o]!.class_type}) is not an output node`);
  }
  return problems;
}

/** The body schema of a workflow's endpoint: one field per parameter, with its limits and default. */
export function bodySchemaOf(m: WorkflowManifest): z.ZodObject {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, p] of Object.entries(m.parameters)) {
    let s: z.ZodType;
    if (p.enum) s = z.union(p.enum.map((v) => z.literal(v)) as unknown as [z.ZodLiteral, z.ZodLiteral]);
    else if (p.type === 'string') s = z.string().max(p.maxLength ?? 16_384);
    else if (p.type === 'image') s = z.string().min(1).describe('base64 or a data: URL (PNG, JPEG, WebP)');
    else if (p.type === 'boolean') s = z.boolean();
    else {
      let n = p.type === 'integer' ? z.number().int() : z.number();
      if (p.min !== undefined) n = n.min(p.min);
      if (p.max !== undefined) n = n.max(p.max);
      s = n;
    }
    if (p.description) s = s.describe(p.description);
    shape[name] = p.default !== undefined ? s.default(p.default as never) : s;
  }
  return z.strictObject(shape);
}

/** The graph with the parameters' values written into their node inputs (a copy; the file's graph is untouched). */
export function applyParameters(wf: WorkflowFile, values: Record<string, unknown>): ComfyGraph {
  const graph = structuredClone(wf.graph);
  for (const [name, p] of Object.entries(wf.manifest.parameters)) {
    const value = values[name];
    if (value === undefined) continue;
    for (const t of p.sets) graph[t.node]!.inputs[t.input] = value as InputValue;
  }
  return graph;
}
