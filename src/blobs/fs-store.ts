/** Filesystem blob store (the default): `<dir>/<aa>/<sha256>`, written atomically via a temp file + rename. */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, openAsBlob } from 'node:fs';
import { mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
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
  /**
   * Directories known to exist. Each is made once, not before every put: two fewer round trips to libuv's
   * pool for every stored output, ~1 ms of each render on a loaded 2-core box (bench/README.md, issue 25).
   */
  private readonly madeDirs = new Set<string>();

  constructor(private readonly dir: string) {}

  private pathFor(sha256: string): string {
    assertSha256(sha256);
    return path.join(this.dir, sha256.slice(0, 2), sha256);
  }

  private get staging(): string {
    return path.join(this.dir, 'tmp');
  }

  /** Bytes already in memory: hashed in one call and written with one writeFile, not streamed through a pipeline. */
  async put(bytes: Buffer, meta: BlobMeta): Promise<BlobRef> {
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const tmp = path.join(this.staging, `${randomUUID()}.tmp`);
    try {
      await this.inDir(this.staging, () => writeFile(tmp, bytes));
      await this.publish(tmp, sha256);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    return blobRef(sha256, bytes.length, meta);
  }

  async putStream(source: BlobSource, meta: BlobMeta, opts: PutStreamOptions = {}): Promise<BlobRef> {
    // The name is the hash, known only at the end: stream into a temp file beside the blobs, then rename.
    const tmp = path.join(this.staging, `${randomUUID()}.tmp`);
    const hash = createHash('sha256');
    const counted = { size: 0 };
    try {
      // Made every time: a stream cannot be read again if its temp file could not be opened (it is one
      // round trip, and streamed blobs are few and large).
      await this.makeDir(this.staging);
      await pipeline(Readable.from(meteredChunks(source, hash, counted, opts.maxBytes)), createWriteStream(tmp));
      const sha256 = hash.digest('hex');
      await this.publish(tmp, sha256);
      return blobRef(sha256, counted.size, meta);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The staged file under its hash. Also when the blob exists: the atomic replace makes it young again (mtime
   * is its age), so a prune that lists it as old does not delete the outputs a running render has just stored
   * (they dedup to it).
   */
  private publish(tmp: string, sha256: string): Promise<void> {
    const file = this.pathFor(sha256);
    return this.inDir(path.dirname(file), () => rename(tmp, file));
  }

  /**
   * `io` on a path in `dir`, the directory made first unless known to exist. One removed since (a DATA_DIR
   * cleaned under a running service) is made again and `io` tried once more.
   */
  private async inDir<T>(dir: string, io: () => Promise<T>): Promise<T> {
    if (!this.madeDirs.has(dir)) await this.makeDir(dir);
    try {
      return await io();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.madeDirs.delete(dir);
      await this.makeDir(dir);
      return await io();
    }
  }

  private async makeDir(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    this.madeDirs.add(dir);
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
