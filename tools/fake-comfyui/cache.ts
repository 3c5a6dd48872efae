/**
 * The fake's output cache keys, like ComfyUI's input-signature cache: class_type, `IS_CHANGED` and the
 * literal inputs, with links replaced by the source's signature and slot. Node ids are not part of it, so
 * identical subgraphs share entries (a resubmitted graph is served from the cache without writing files).
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DataDirs } from './files.ts';
import { resolveAnnotated } from './files.ts';
import type { FakeValue } from './nodes.ts';
import type { Graph } from './queue.ts';

export interface CacheEntry {
  outputs: FakeValue[];
  /** The node's ui output (`{"images": [...]}`), for nodes that have one. */
  ui?: Record<string, unknown>;
}

type RawNode = { class_type?: unknown; inputs?: unknown };

export function signatures(prompt: Graph, isChanged: (node: RawNode) => string): Map<string, string> {
  const memo = new Map<string, string>();
  const visiting = new Set<string>();
  const sig = (id: string): string => {
    const done = memo.get(id);
    if (done) return done;
    if (visiting.has(id)) return `cycle:${id}`;
    visiting.add(id);
    const node = (prompt[id] ?? {}) as RawNode;
    const inputs = node.inputs && typeof node.inputs === 'object' ? (node.inputs as Record<string, unknown>) : {};
    const parts = Object.keys(inputs)
      .sort()
      .map((k): unknown[] => {
        const v = inputs[k];
        if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && Object.hasOwn(prompt, v[0])) return [k, 'link', sig(v[0]), v[1]];
        return [k, 'value', v];
      });
    const s = createHash('sha256')
      .update(JSON.stringify([node.class_type, isChanged(node), parts]))
      .digest('hex');
    visiting.delete(id);
    memo.set(id, s);
    return s;
  };
  for (const id of Object.keys(prompt)) sig(id);
  return memo;
}

/** `IS_CHANGED`: LoadImage/LoadImageMask hash the file; a missing file never matches the cache. */
export function fileIsChanged(dirs: DataDirs, node: RawNode): string {
  if (node.class_type !== 'LoadImage' && node.class_type !== 'LoadImageMask') return '';
  const ref = (node.inputs as Record<string, unknown> | undefined)?.image;
  const full = typeof ref === 'string' ? resolveAnnotated(dirs, ref) : undefined;
  try {
    if (!full) throw new Error('missing');
    return createHash('sha256').update(readFileSync(full)).digest('hex');
  } catch {
    return `nan:${randomUUID()}`;
  }
}
