/** Filesystem blob store (the default): `<dir>/<aa>/<sha256>`, written atomically via a temp file + rename. */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { BlobRef } from '../render/types.ts';
import { BlobNotFoundError, SHA256_HEX, type BlobMeta, type BlobStore } from './store.ts';

export class FsBlobStore implements BlobStore {
  constructor(private readonly dir: string) {}

  private pathFor(sha256: string): string {
    if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return path.join(this.dir, sha256.slice(0, 2), sha256);
  }

  async put(bytes: Buffer, meta: BlobMeta): Promise<BlobRef> {
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const ref: BlobRef = { sha256, size: bytes.length, mime: meta.mime };
    if (meta.width !== undefined) ref.width = meta.width;
    if (meta.height !== undefined) ref.height = meta.height;
    if (await this.has(sha256)) return ref;
    const file = this.pathFor(sha256);
    await mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${randomUUID()}.tmp`;
    try {
      await writeFile(tmp, bytes);
      await rename(tmp, file);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    return ref;
  }

  async get(sha256: string): Promise<Buffer> {
    try {
      return await readFile(this.pathFor(sha256));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(sha256);
      throw err;
    }
  }

  async has(sha256: string): Promise<boolean> {
    try {
      await stat(this.pathFor(sha256));
      return true;
    } catch {
      return false;
    }
  }
}
