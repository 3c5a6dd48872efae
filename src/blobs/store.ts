/**
 * Content-addressed blob store. Images and videos never travel through workflow history: activities put bytes
 * here and pass `BlobRef`s (sha256, size, mime, dims). Identical bytes share one blob, so re-puts are no-ops.
 *
 * Two implementations share this interface and one test suite (test/blobs/blob-store.test.ts): the filesystem
 * store (default, one host) and the S3-compatible store (workers and fronts on different hosts). Large blobs
 * (videos run to hundreds of MB) go through `putStream` / `openRead`, which never hold a whole object in memory;
 * `put` / `get` are conveniences for images that are in memory anyway. `list` / `delete` are the inventory
 * retention works from.
 */
import type { Readable } from 'node:stream';
import type { BlobRef } from '../contracts/render.ts';

export interface BlobMeta {
  mime: string;
  width?: number;
  height?: number;
}

/** What `putStream` reads: a Node Readable, an async generator, or chunks already in memory. */
export type BlobSource = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/** Inclusive byte range, as in HTTP `Range: bytes=start-end`; `end` omitted = to the last byte. */
export interface ByteRange {
  start: number;
  end?: number;
}

export interface BlobStore {
  put(bytes: Buffer, meta: BlobMeta): Promise<BlobRef>;
  /**
   * Hashes while it stores: the content address is known only once the last byte went through. `maxBytes`
   * aborts (BlobTooLargeError, nothing left behind) when the source is longer.
   */
  putStream(source: BlobSource, meta: BlobMeta, opts?: PutStreamOptions): Promise<BlobRef>;
  get(sha256: string): Promise<Buffer>;
  /**
   * The blob as a `Blob`, for request bodies (uploads to ComfyUI): file-backed in the filesystem store, so an
   * upload streams from disk instead of holding the image (and the multipart encoder's copies) in memory.
   * Throws BlobNotFoundError when missing.
   */
  getBlob(sha256: string, mime?: string): Promise<Blob>;
  /** A stream of the blob's bytes (or of `range`); throws BlobNotFoundError before streaming when missing. */
  openRead(sha256: string, range?: ByteRange): Promise<Readable>;
  /** Size in bytes, or undefined when the blob is missing. */
  size(sha256: string): Promise<number | undefined>;
  has(sha256: string): Promise<boolean>;
  /**
   * Inventory, for retention (`renders prune`, the retention schedule) and the size metric: every blob with
   * its size and age (the time it was first stored: file mtime, S3 LastModified). Staging objects are not
   * blobs and are not listed. Streams page by page, so a large store is never held in memory at once.
   */
  list(): AsyncIterable<StoredBlob>;
  /** Deletes these blobs; a missing one is no error (another prune, or a lost disk, was first). */
  delete(sha256s: readonly string[]): Promise<void>;
}

export interface StoredBlob {
  sha256: string;
  size: number;
  /** When the blob was first stored, in ms since the epoch. */
  storedAtMs: number;
}

export interface PutStreamOptions {
  maxBytes?: number;
}

export class BlobTooLargeError extends Error {
  override name = 'BlobTooLargeError';
}

/** The source's chunks, hashed and counted on the way; BlobTooLargeError past `maxBytes`. */
export async function* meteredChunks(
  source: BlobSource,
  hash: { update(chunk: Uint8Array): unknown },
  counter: { size: number },
  maxBytes = Number.POSITIVE_INFINITY,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    counter.size += chunk.length;
    if (counter.size > maxBytes) throw new BlobTooLargeError(`stream exceeds ${maxBytes} bytes`);
    hash.update(chunk);
    yield chunk;
  }
}

export class BlobNotFoundError extends Error {
  override name = 'BlobNotFoundError';
  constructor(readonly sha256: string) {
    super(`blob ${sha256} not found`);
  }
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;

export function assertSha256(sha256: string): void {
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
}

export function blobRef(sha256: string, size: number, meta: BlobMeta): BlobRef {
  const ref: BlobRef = { sha256, size, mime: meta.mime };
  if (meta.width !== undefined) ref.width = meta.width;
  if (meta.height !== undefined) ref.height = meta.height;
  return ref;
}

export function assertRange(range: ByteRange | undefined, size: number, sha256: string): void {
  if (!range) return;
  const end = range.end ?? size - 1;
  if (!Number.isInteger(range.start) || !Number.isInteger(end) || range.start < 0 || end < range.start || end >= size) {
    throw new RangeError(`range ${range.start}-${range.end ?? ''} is outside blob ${sha256} (${size} bytes)`);
  }
}
