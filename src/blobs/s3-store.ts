/**
 * S3-compatible blob store (AWS S3, or any server speaking its API: versitygw, MinIO, Ceph RGW, ...), for
 * workers and fronts on different hosts. Objects live at `<prefix>blobs/<aa>/<sha256>` with their MIME type as
 * Content-Type.
 *
 * Streaming: a put streams through a multipart upload (at most PART_SIZE x QUEUE_SIZE bytes buffered) to a
 * staging key `<prefix>tmp/<uuid>` while it hashes, then copies server-side to the content address and deletes
 * the staging object. A crash between the two leaves only a staging object, never a blob under a wrong name:
 * operators can expire `<prefix>tmp/` with a bucket lifecycle rule. Reads stream the response body.
 * The inventory (retention) pages through ListObjectsV2 under `<prefix>blobs/`, taking an object's
 * LastModified as its age, and deletes with DeleteObjects, a thousand keys per request.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
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
  SHA256_HEX,
  type StoredBlob,
} from './store.ts';

/** S3's minimum part size; parts of a multipart upload except the last must be at least this big. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 2;
/** DeleteObjects takes at most 1000 keys per request. */
const DELETE_BATCH = 1000;

export interface S3BlobStoreOptions {
  bucket: string;
  /** Key prefix, e.g. `comfy-durable/` (a trailing slash is added when missing). */
  prefix?: string;
  /** Client settings; credentials come from the SDK's default chain (AWS_ACCESS_KEY_ID, profiles, roles). */
  client?: S3ClientConfig;
}

export class S3BlobStore implements BlobStore {
  readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(options: S3BlobStoreOptions) {
    this.client = new S3Client(options.client ?? {});
    this.bucket = options.bucket;
    const prefix = options.prefix ?? '';
    this.prefix = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  }

  private keyFor(sha256: string): string {
    assertSha256(sha256);
    return `${this.prefix}blobs/${sha256.slice(0, 2)}/${sha256}`;
  }

  /** Bytes already in memory: hash first, then one PutObject straight to the content address. */
  async put(bytes: Buffer, meta: BlobMeta): Promise<BlobRef> {
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    // Written even when it exists: LastModified is the blob's age, and a prune must see a re-stored blob as young.
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.keyFor(sha256), Body: bytes, ContentType: meta.mime }));
    return blobRef(sha256, bytes.length, meta);
  }

  async putStream(source: BlobSource, meta: BlobMeta, opts: PutStreamOptions = {}): Promise<BlobRef> {
    const hash = createHash('sha256');
    const counted = { size: 0 };
    const staging = `${this.prefix}tmp/${randomUUID()}`;
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: staging, Body: Readable.from(meteredChunks(source, hash, counted, opts.maxBytes)), ContentType: meta.mime },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
      const sha256 = hash.digest('hex');
      // Server-side copy keeps the bytes off this host; a single copy takes objects up to 5 GB. Copied even when
      // the blob exists, so its LastModified (its age for prune) is renewed, as the filesystem store does.
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: this.keyFor(sha256),
          CopySource: `${this.bucket}/${encodeURIComponent(staging)}`,
        }),
      );
      return blobRef(sha256, counted.size, meta);
    } finally {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: staging })).catch(() => undefined);
    }
  }

  async getBlob(sha256: string, mime?: string): Promise<Blob> {
    return new Blob([await this.get(sha256)], mime ? { type: mime } : {});
  }

  async get(sha256: string): Promise<Buffer> {
    const body = await this.openRead(sha256);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async openRead(sha256: string, range?: ByteRange): Promise<Readable> {
    const key = this.keyFor(sha256);
    let rangeHeader: string | undefined;
    if (range) {
      // S3 clamps an end past the last byte instead of refusing it: check against the size like the fs store.
      const size = await this.size(sha256);
      if (size === undefined) throw new BlobNotFoundError(sha256);
      assertRange(range, size, sha256);
      rangeHeader = `bytes=${range.start}-${range.end ?? size - 1}`;
    }
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: rangeHeader }));
      if (!(res.Body instanceof Readable)) throw new Error(`S3 GetObject for ${key} returned no readable body`);
      return res.Body;
    } catch (err) {
      if (isNotFound(err)) throw new BlobNotFoundError(sha256);
      throw err;
    }
  }

  async size(sha256: string): Promise<number | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.keyFor(sha256) }));
      return res.ContentLength ?? 0;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async has(sha256: string): Promise<boolean> {
    return (await this.size(sha256)) !== undefined;
  }

  async *list(): AsyncGenerator<StoredBlob> {
    const under = `${this.prefix}blobs/`;
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: under, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        // Only `<aa>/<sha256>` under the prefix is a blob; anything else an operator put there is not ours.
        const m = /^([0-9a-f]{2})\/([0-9a-f]{64})$/.exec((o.Key ?? '').slice(under.length));
        if (!m || !m[2]!.startsWith(m[1]!) || !SHA256_HEX.test(m[2]!)) continue;
        yield { sha256: m[2]!, size: o.Size ?? 0, storedAtMs: o.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async delete(sha256s: readonly string[]): Promise<void> {
    const keys = sha256s.map((sha) => this.keyFor(sha));
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const res = await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
      // A missing key is a success in S3's DeleteObjects; anything reported here is a real refusal.
      const errors = (res.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (errors.length > 0) {
        const first = errors[0]!;
        throw new Error(`S3 DeleteObjects refused ${errors.length} of ${batch.length} blobs (first: ${first.Key}: ${first.Code} ${first.Message ?? ''})`);
      }
    }
  }
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}
