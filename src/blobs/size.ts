/** The blob store's size for the `comfy_durable_blob_store_*` gauges, from its inventory (either store). */
import type { BlobStore } from './store.ts';

/** Total bytes and count, cached: the metric is scraped often, and listing a big store (or bucket) is not free. */
export function blobStoreSizer(store: Pick<BlobStore, 'list'>, cacheMs = 60_000): () => Promise<{ bytes: number; count: number }> {
  let cached: { at: number; value: { bytes: number; count: number } } | undefined;
  return async () => {
    if (cached && Date.now() - cached.at < cacheMs) return cached.value;
    const value = { bytes: 0, count: 0 };
    for await (const b of store.list()) {
      value.bytes += b.size;
      value.count++;
    }
    cached = { at: Date.now(), value };
    return value;
  };
}
