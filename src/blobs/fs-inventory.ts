/**
 * What the filesystem blob store holds: `<dir>/<aa>/<sha256>` files with their size and modification time
 * (the time of their first put), one shard directory at a time; and their deletion.
 */
import { readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { assertSha256, SHA256_HEX, type StoredBlob } from './store.ts';

export async function* listBlobFiles(dir: string): AsyncGenerator<StoredBlob> {
  let shards: string[];
  try {
    shards = await readdir(dir);
  } catch {
    return;
  }
  for (const shard of shards.sort()) {
    if (!/^[0-9a-f]{2}$/.test(shard)) continue;
    let names: string[];
    try {
      names = await readdir(path.join(dir, shard));
    } catch {
      continue;
    }
    for (const name of names) {
      if (!SHA256_HEX.test(name) || !name.startsWith(shard)) continue;
      try {
        const st = await stat(path.join(dir, shard, name));
        yield { sha256: name, size: st.size, storedAtMs: st.mtimeMs };
      } catch {
        // deleted meanwhile
      }
    }
  }
}

export async function deleteBlobFiles(dir: string, sha256s: readonly string[]): Promise<void> {
  for (const sha256 of sha256s) assertSha256(sha256);
  for (const sha256 of sha256s) {
    await unlink(path.join(dir, sha256.slice(0, 2), sha256)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
