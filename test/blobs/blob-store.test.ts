/**
 * The same blob suite against both stores: the filesystem store in a temp dir, and the S3 store against a real
 * S3-compatible server (versitygw, built by scripts/setup-cluster-tools.sh) with a fresh bucket.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { S3BlobStore } from '../../src/blobs/s3-store.ts';
import { skipUnlessTools } from '../support/cluster-tools.ts';
import { startS3Server, type S3TestServer } from '../support/s3-server.ts';
import { blobStoreSuite } from './suite.ts';

const fsDir = mkdtempSync(path.join(os.tmpdir(), 'cd-blobs-'));
afterAll(() => rmSync(fsDir, { recursive: true, force: true }));
blobStoreSuite('filesystem', () => ({
  store: new FsBlobStore(fsDir),
  otherHost: new FsBlobStore(fsDir),
  leftovers: async () => {
    try {
      return readdirSync(path.join(fsDir, 'tmp'));
    } catch {
      return [];
    }
  },
  plantStray: async (relative) => {
    mkdirSync(path.dirname(path.join(fsDir, relative)), { recursive: true });
    writeFileSync(path.join(fsDir, relative), 'not a blob');
  },
}));

describe('filesystem store, its directories', () => {
  it('stores again after its directories were removed under it (they are made once, then known)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-blobs-gone-'));
    try {
      const store = new FsBlobStore(dir);
      const first = await store.put(Buffer.from('first'), { mime: 'text/plain' });
      // A DATA_DIR cleaned under a running service: the staging and shard directories the store made are gone.
      rmSync(dir, { recursive: true, force: true });
      const again = await store.put(Buffer.from('first'), { mime: 'text/plain' });
      const second = await store.putStream([Buffer.from('second')], { mime: 'text/plain' });
      expect(again.sha256).toBe(first.sha256);
      expect((await store.get(first.sha256)).toString()).toBe('first');
      expect((await store.get(second.sha256)).toString()).toBe('second');
      expect(readdirSync(path.join(dir, 'tmp'))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(skipUnlessTools('S3 blob store', 'VERSITYGW_BIN'))('S3', () => {
  let server: S3TestServer;
  const bucket = 'comfy-durable-test';
  const prefix = 'deploy-a/';
  const storeFor = (): S3BlobStore =>
    new S3BlobStore({
      bucket,
      prefix,
      client: {
        endpoint: server.endpoint,
        region: server.region,
        forcePathStyle: true,
        credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
      },
    });
  let store: S3BlobStore;
  let otherHost: S3BlobStore;

  beforeAll(async () => {
    server = await startS3Server();
    store = storeFor();
    otherHost = storeFor();
    await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    store?.client.destroy();
    otherHost?.client.destroy();
    await server?.stop();
  });

  blobStoreSuite('S3', () => ({
    store,
    otherHost,
    leftovers: async () => {
      const res = await store.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}tmp/` }));
      return (res.Contents ?? []).map((o) => o.Key ?? '');
    },
    plantStray: async (relative) => {
      await store.client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}blobs/${relative}`, Body: 'not a blob' }));
    },
  }));

  it('keeps the MIME type as the object Content-Type under the prefix', async () => {
    const ref = await store.put(Buffer.from('not really a png'), { mime: 'image/png' });
    const head = await store.client.send(new HeadObjectCommand({ Bucket: bucket, Key: `${prefix}blobs/${ref.sha256.slice(0, 2)}/${ref.sha256}` }));
    expect(head.ContentType).toBe('image/png');
    const streamed = await store.putStream([Buffer.from('a streamed video')], { mime: 'video/mp4' });
    const head2 = await store.client.send(new HeadObjectCommand({ Bucket: bucket, Key: `${prefix}blobs/${streamed.sha256.slice(0, 2)}/${streamed.sha256}` }));
    expect(head2.ContentType).toBe('video/mp4');
  });
});
