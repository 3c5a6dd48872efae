/**
 * Golden graphs read against the recorded real `/object_info`, node by node: the schema facts a graph must
 * satisfy for ComfyUI 0.33.0 to accept it. Deliberately test-side and independent of both the client's
 * pre-submit check (src/comfyui/preflight.ts, which checks far less) and the fake's validator: the real
 * server accepted every golden graph (test/fixtures/real-comfyui/golden-real.json), so this must too, and a
 * graph-builder change that breaks a schema fact fails here before it reaches a ComfyUI.
 */
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { isLink } from '../../src/comfyui/graph.ts';
import { comboOptions, inputOptions, inputSpec, type InputSpec, type ObjectInfo } from '../../src/comfyui/object-info.ts';

/** Everything wrong with `g` against `info`, one line each (empty when the graph fits the schemas). */
export function schemaProblems(g: ComfyGraph, info: ObjectInfo): string[] {
  const out: string[] = [];
  for (const [id, node] of Object.entries(g)) {
    const cls = info[node.class_type];
    if (!cls) {
      out.push(`${id}: node class ${node.class_type} not in object_info`);
      continue;
    }
    for (const [name, spec] of Object.entries(cls.input.required ?? {})) {
      // ComfyUI 0.33 passes a missing dynamic combo (SaveVideo's codec) and fails only when executing.
      if (!Object.hasOwn(node.inputs, name) && spec[0] !== 'COMFY_DYNAMICCOMBO_V3') out.push(`${id}.${name}: required input missing`);
    }
    for (const [name, value] of Object.entries(node.inputs)) {
      // `format.codec` (an input of the option chosen in a dynamic combo) and `ref_images.ref_image_0` (a slot
      // of an autogrow list): inputs of a V3 container, whose nested specs are not checked here.
      const container = inputSpec(cls, name.split('.')[0] ?? '')?.[0];
      if (name.includes('.') && (container === 'COMFY_DYNAMICCOMBO_V3' || container === 'COMFY_AUTOGROW_V3')) continue;
      const spec = inputSpec(cls, name);
      // ComfyUI ignores undeclared inputs; in a graph we build, one is a misspelt name that would be lost.
      if (!spec) {
        out.push(`${id}.${name}: ${node.class_type} declares no such input`);
        continue;
      }
      out.push(...(isLink(value) ? linkProblems(g, info, `${id}.${name}`, spec, value) : valueProblems(`${id}.${name}`, spec, value)));
    }
  }
  return out;
}

function linkProblems(g: ComfyGraph, info: ObjectInfo, where: string, spec: InputSpec, [src, slot]: [string, number]): string[] {
  const from = g[src];
  if (!from) return [`${where}: link to absent node ${src}`];
  const outputs = info[from.class_type]?.output ?? [];
  if (!Number.isInteger(slot) || slot < 0 || slot >= outputs.length) return [`${where}: ${from.class_type} has no output ${slot}`];
  const received = outputs[slot];
  const wanted = spec[0];
  if (typeof received !== 'string' || typeof wanted !== 'string') return [`${where}: cannot link ${String(received)} into a combo`];
  const a = received.split(',').map((t) => t.trim());
  const b = wanted.split(',').map((t) => t.trim());
  if (a.includes('*') || b.includes('*') || a.some((t) => b.includes(t))) return [];
  return [`${where}: ${received} linked into ${wanted}`];
}

function valueProblems(where: string, spec: InputSpec, value: unknown): string[] {
  const type = spec[0];
  const opts = inputOptions(spec);
  if (type === 'INT' || type === 'FLOAT') {
    if (typeof value !== 'number' || (type === 'INT' && !Number.isInteger(value))) return [`${where}: ${JSON.stringify(value)} is not ${type}`];
    if (typeof opts.min === 'number' && value < opts.min) return [`${where}: ${value} < min ${opts.min}`];
    if (typeof opts.max === 'number' && value > opts.max) return [`${where}: ${value} > max ${opts.max}`];
    return [];
  }
  if (type === 'STRING') return typeof value === 'string' ? [] : [`${where}: ${JSON.stringify(value)} is not a string`];
  if (type === 'BOOLEAN') return typeof value === 'boolean' ? [] : [`${where}: ${JSON.stringify(value)} is not a boolean`];
  const options = comboOptions(spec);
  // LoadImage-style combos list the input folder; the node itself checks the file (ComfyUI's VALIDATE_INPUTS).
  if (options && !opts.image_upload && !options.includes(value)) return [`${where}: ${JSON.stringify(value)} not among ${options.length} options`];
  return [];
}
