/** Filesystem blob store (the default): `<dir>/<aa>/<sha256>`, written atomically via a temp file + rename. */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, type ReadStream } from 'node:fs';
import { mkdir, open, readFile, rename, stat, writeFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobRef } from '../render/types.ts';
import { BlobNotFoundError, BlobTooLargeError, SHA256_HEX, type BlobMeta, type BlobStore } from './store.ts';

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

  async putStream(source: AsyncIterable<Uint8Array>, meta: BlobMeta, opts: { maxBytes?: number } = {}): Promise<BlobRef> {
    // Written under a temporary name in the store's own directory (same filesystem: the rename is atomic),
    // hashed on the way, then renamed to its content address.
    await mkdir(this.dir, { recursive: true });
    const tmp = path.join(this.dir, `incoming-${randomUUID()}.tmp`);
    const hash = createHash('sha256');
    let size = 0;
    const max = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > max) return done(new BlobTooLargeError(`stream exceeds ${max} bytes`));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, meter, createWriteStream(tmp));
      const sha256 = hash.digest('hex');
      const ref: BlobRef = { sha256, size, mime: meta.mime };
      if (meta.width !== undefined) ref.width = meta.width;
      if (meta.height !== undefined) ref.height = meta.height;
      if (await this.has(sha256)) {
        await unlink(tmp).catch(() => undefined);
        return ref;
      }
      const file = this.pathFor(sha256);
      await mkdir(path.dirname(file), { recursive: true });
      await rename(tmp, file);
      return ref;
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
  }

  async openStream(sha256: string): Promise<ReadStream> {
    const file = this.pathFor(sha256);
    // Open first, so a missing blob is an error here rather than an 'error' event mid-response.
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new BlobNotFoundError(sha256);
      throw err;
    }
    return handle.createReadStream({ autoClose: true, highWaterMark: 256 * 1024 });
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
