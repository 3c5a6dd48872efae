/**
 * The plan of a `prompt` render (a client's own API-format graph): one item, the graph as sent with two
 * changes, both recorded in history as the graph as run:
 * - every `filename_prefix` is put under the render's own folder, so ComfyUI writes fresh files for each
 *   render (an identical graph would otherwise be answered from its cache, pointing at another render's
 *   files) and a retry on another GPU writes its own;
 * - every input naming an image uploaded through the front (`<sha256>.<ext>`) names the content-addressed
 *   upload the attempt makes on whichever ComfyUI runs it (again on a retry elsewhere).
 * Pure and deterministic, like the model plans.
 */
import type { ComfyGraph, GraphNode, InputValue } from '../comfyui/graph.ts';
import { filenamePrefixFor, inputUploadFor, loadImageName } from '../models/plan.ts';
import type { InputUpload, PromptRender, RenderPlan } from '../contracts/render.ts';

/** A client prefix kept readable inside the render's folder, never climbing out of it. */
function safePrefix(prefix: string): string {
  const cleaned = prefix
    .split(/[\\/]+/)
    .filter((p) => p !== '' && p !== '.' && p !== '..')
    .join('_')
    .replace(/[^\w.-]+/g, '_')
    .slice(0, 80);
  return cleaned === '' ? 'ComfyUI' : cleaned;
}

export function planPrompt(req: PromptRender, opts: { renderId: string }): RenderPlan {
  const spec = req.graph;
  const prefixRoot = filenamePrefixFor(opts.renderId, 0);
  const byName = new Map<string, InputUpload>();
  for (const blob of spec.inputs) {
    const upload = inputUploadFor(blob);
    byName.set(upload.filename, upload);
  }
  const used = new Map<string, InputUpload>();
  const graph: ComfyGraph = {};
  for (const [id, node] of Object.entries(spec.graph)) {
    const inputs: Record<string, InputValue> = {};
    for (const [name, value] of Object.entries(node.inputs ?? {})) {
      if (name === 'filename_prefix' && typeof value === 'string') {
        inputs[name] = `${prefixRoot}/${safePrefix(value)}`;
        continue;
      }
      const upload = typeof value === 'string' ? byName.get(value) : undefined;
      if (upload) {
        used.set(upload.filename, upload);
        inputs[name] = loadImageName(upload);
        continue;
      }
      inputs[name] = value;
    }
    const copy: GraphNode = { ...node, inputs, _meta: node._meta ?? { title: node.class_type } };
    graph[id] = copy;
  }
  return { items: [{ index: 0, seed: req.seed, graph }], uploads: [...used.values()], outputNode: '' };
}
