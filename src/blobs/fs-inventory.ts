/**
 * What the filesystem blob store holds, for retention (prune) and the size metric: `<dir>/<aa>/<sha256>`
 * files with their size and modification time (the time of their first put).
 */
import { readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { SHA256_HEX } from './store.ts';

export interface BlobFile {
  sha256: string;
  size: number;
  mtimeMs: number;
}

export async function listBlobFiles(dir: string): Promise<BlobFile[]> {
  const out: BlobFile[] = [];
  let shards: string[];
  try {
    shards = await readdir(dir);
  } catch {
    return out;
  }
  for (const shard of shards) {
    if (!/^[0-9a-f]{2}$/.test(shard)) continue;
    let names: string[];
    try {
      names = await readdir(path.join(dir, shard));
    } catch {
      continue;
    }
    for (const name of names) {
      if (!SHA256_HEX.test(name)) continue;
      try {
        const st = await stat(path.join(dir, shard, name));
        out.push({ sha256: name, size: st.size, mtimeMs: st.mtimeMs });
      } catch {
        // deleted meanwhile
      }
    }
  }
  return out;
}

export async function deleteBlobFile(dir: string, sha256: string): Promise<void> {
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
  await unlink(path.join(dir, sha256.slice(0, 2), sha256)).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** Total bytes and count, cached: the metric is scraped often, the store may hold many files. */
export function blobStoreSizer(dir: string, cacheMs = 60_000): () => Promise<{ bytes: number; count: number }> {
  let cached: { at: number; value: { bytes: number; count: number } } | undefined;
  return async () => {
    if (cached && Date.now() - cached.at < cacheMs) return cached.value;
    const files = await listBlobFiles(dir);
    const value = { bytes: files.reduce((n, f) => n + f.size, 0), count: files.length };
    cached = { at: Date.now(), value };
    return value;
  };
}
