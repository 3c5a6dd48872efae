/** Filesystem blob store (the default): `<dir>/<aa>/<sha256>`, written atomically via a temp file + rename. */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, openAsBlob } from 'node:fs';
import { mkdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobRef } from '../contracts/render.ts';
import {
  assertRange,
  assertSha256,
  BlobNotFoundError,
  blobRef,
  type BlobMeta,
  meteredChunks,
  type BlobSource,
  type BlobStore,
  type PutStreamOptions,
  type ByteRange,
  type StoredBlob,
} from './store.ts';
import { deleteBlobFiles, listBlobFiles } from './fs-inventory.ts';

export class FsBlobStore implements BlobStore {
  constructor(private readonly dir: string) {}

  private pathFor(sha256: string): string {
    assertSha256(sha256);
    return path.join(this.dir, sha256.slice(0, 2), sha256);
  }

  put(bytes: Buffer, meta: BlobMeta): Promise<BlobRef> {
    return this.putStream([bytes], meta);
  }

  async putStream(source: BlobSource, meta: BlobMeta, opts: PutStreamOptions = {}): Promise<BlobRef> {
    // The name is the hash, known only at the end: stream into a temp file beside the blobs, then rename.
    const staging = path.join(this.dir, 'tmp');
    await mkdir(staging, { recursive: true });
    const tmp = path.join(staging, `${randomUUID()}.tmp`);
    const hash = createHash('sha256');
    const counted = { size: 0 };
    try {
      await pipeline(Readable.from(meteredChunks(source, hash, counted, opts.maxBytes)), createWriteStream(tmp));
      const sha256 = hash.digest('hex');
      const file = this.pathFor(sha256);
      // Also when the blob exists: the atomic replace makes it young again (mtime is its age), so a prune
      // that lists it as old does not delete the outputs a running render has just stored (they dedup to it).
      await mkdir(path.dirname(file), { recursive: true });
      await rename(tmp, file);
      return blobRef(sha256, counted.size, meta);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
  }

  async get(sha256: string): Promise<Buffer> {
    try {
      return await readFile(this.pathFor(sha256));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(sha256);
      throw err;
    }
  }

  async getBlob(sha256: string, mime?: string): Promise<Blob> {
    try {
      // Read lazily, in chunks, when the Blob is consumed; the file never changes (content-addressed).
      return await openAsBlob(this.pathFor(sha256), mime ? { type: mime } : {});
    } catch (err) {
      // openAsBlob reports a missing file as a TypeError without an errno code.
      if (!(await this.has(sha256))) throw new BlobNotFoundError(sha256);
      throw err;
    }
  }

  async openRead(sha256: string, range?: ByteRange): Promise<Readable> {
    const size = await this.size(sha256);
    if (size === undefined) throw new BlobNotFoundError(sha256);
    assertRange(range, size, sha256);
    return createReadStream(this.pathFor(sha256), range ? { start: range.start, end: range.end ?? size - 1 } : {});
  }

  async size(sha256: string): Promise<number | undefined> {
    try {
      return (await stat(this.pathFor(sha256))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  list(): AsyncIterable<StoredBlob> {
    return listBlobFiles(this.dir);
  }

  delete(sha256s: readonly string[]): Promise<void> {
    return deleteBlobFiles(this.dir, sha256s);
  }
}
