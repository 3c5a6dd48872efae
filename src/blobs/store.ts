/**
 * Content-addressed blob store. Images never travel through workflow history: activities put bytes here and
 * pass `BlobRef`s (sha256, size, mime, dims). Identical bytes share one blob, so re-puts are no-ops.
 */
import type { BlobRef } from '../render/types.ts';

export interface BlobMeta {
  mime: string;
  width?: number;
  height?: number;
}

export interface BlobStore {
  put(bytes: Buffer, meta: BlobMeta): Promise<BlobRef>;
  get(sha256: string): Promise<Buffer>;
  has(sha256: string): Promise<boolean>;
  /**
   * Stores a stream without holding it in memory (videos: hundreds of MB), hashing while it is written.
   * `maxBytes` aborts (and leaves nothing behind) when the stream is longer.
   */
  putStream(source: AsyncIterable<Uint8Array>, meta: BlobMeta, opts?: { maxBytes?: number }): Promise<BlobRef>;
  /** The blob as a stream of chunks; BlobNotFoundError when absent. */
  openStream(sha256: string): Promise<NodeJS.ReadableStream & AsyncIterable<Buffer>>;
}

export class BlobTooLargeError extends Error {
  override name = 'BlobTooLargeError';
}

export class BlobNotFoundError extends Error {
  override name = 'BlobNotFoundError';
  constructor(readonly sha256: string) {
    super(`blob ${sha256} not found`);
  }
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;
