/**
 * The render request of a client's own graph (a `prompt` render: ComfyUI's API, workflow files): the graph,
 * the uploaded images it names, and a summary of it for listings, the memo and the gallery.
 */
import { createHash } from 'node:crypto';
import type { ComfyGraph, GraphNode } from '../comfyui/graph.ts';
import { renderIdForKey } from './render-ids.ts';
import type { BlobStore } from '../blobs/store.ts';
import type { BlobRef, GraphSpec, PromptRender } from '../contracts/render.ts';

/**
 * A prompt id names its render: the render id derives from it (as from an Idempotency-Key), so any front, a
 * restarted one included, finds a prompt's render, and the same prompt id again attaches to it. Scoped by
 * the API key's name as the submitter scopes keys (submit.ts): another key's prompt id names another render.
 */
export const promptKey = (promptId: string): string => `comfyui-prompt:${promptId}`;
export const renderIdForPrompt = (promptId: string, owner?: string): string => renderIdForKey(promptKey(promptId), owner);

/** A canonical lowercase UUID derived from a client's Idempotency-Key (a retry gets the same prompt id). */
export function promptIdForKey(scope: string, key: string): string {
  const h = createHash('sha256').update(`${scope}\0${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The names the upload routes give images: the blob's sha256 and its type (models/plan.ts inputUploadFor). */
export const UPLOAD_NAME = /^([0-9a-f]{64})\.(png|jpg|webp)$/;
const MIME_OF_EXT: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' };

/** Images the graph names by an upload name of this service, found in the blob store. */
export async function graphInputs(graph: ComfyGraph, blobs: BlobStore): Promise<BlobRef[]> {
  const found = new Map<string, BlobRef>();
  for (const node of Object.values(graph)) {
    for (const v of Object.values(node.inputs)) {
      const m = typeof v === 'string' ? UPLOAD_NAME.exec(v) : null;
      if (!m || found.has(m[1]!)) continue;
      const size = await blobs.size(m[1]!);
      if (size !== undefined) found.set(m[1]!, { sha256: m[1]!, size, mime: MIME_OF_EXT[m[2]!]! });
    }
  }
  return [...found.values()];
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * The render request of a graph: the graph itself, and a summary of it for listings, the memo and the
 * gallery (the first sampler's seed, steps, cfg, sampler; the first size; the first prompt text).
 */
export function promptRequest(spec: GraphSpec, model: string): PromptRender {
  const first = <T>(pick: (n: GraphNode) => T | undefined): T | undefined => {
    for (const n of Object.values(spec.graph)) {
      const v = pick(n);
      if (v !== undefined) return v;
    }
    return undefined;
  };
  const seed = first((n) => num(n.inputs.seed) ?? num(n.inputs.noise_seed)) ?? 0;
  const width = first((n) => num(n.inputs.width)) ?? 0;
  const height = first((n) => num(n.inputs.height)) ?? 0;
  const sampler = first((n) => (typeof n.inputs.sampler_name === 'string' ? n.inputs.sampler_name : undefined)) ?? '';
  const scheduler = first((n) => (typeof n.inputs.scheduler === 'string' ? n.inputs.scheduler : undefined)) ?? '';
  return {
    kind: 'prompt',
    model,
    prompt: first((n) => (typeof n.inputs.text === 'string' && n.inputs.text !== '' ? n.inputs.text : undefined)) ?? '',
    seed: Math.min(Math.max(0, Math.trunc(seed)), Number.MAX_SAFE_INTEGER),
    steps: first((n) => num(n.inputs.steps)) ?? 0,
    cfg: first((n) => num(n.inputs.cfg)) ?? 0,
    sampler,
    scheduler,
    width,
    height,
    batchSize: 1,
    nIter: 1,
    graph: spec,
  };
}
