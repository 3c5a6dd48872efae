/**
 * Live `/object_info` per backend, cached briefly: graphs are validated against what this ComfyUI really has
 * installed (nodes, model files) before submit, without fetching the multi-MB document for every prompt.
 */
import type { ComfyClient } from '../comfyui/client.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';

const TTL_MS = 60_000;

export class ObjectInfoCache {
  private readonly entries = new Map<string, { at: number; info: Promise<ObjectInfo> }>();

  get(backendId: string, client: ComfyClient): Promise<ObjectInfo> {
    const hit = this.entries.get(backendId);
    if (hit && Date.now() - hit.at < TTL_MS) return hit.info;
    const info = client.objectInfo();
    this.entries.set(backendId, { at: Date.now(), info });
    info.catch(() => this.entries.delete(backendId));
    return info;
  }

  /** After a validation failure the operator may have just installed the missing file: refetch next time. */
  invalidate(backendId: string): void {
    this.entries.delete(backendId);
  }
}
