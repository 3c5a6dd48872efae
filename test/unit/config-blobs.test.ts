import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { blobStoreFromConfig } from '../../src/blobs/from-config.ts';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { S3BlobStore } from '../../src/blobs/s3-store.ts';

describe('blob store configuration', () => {
  it('defaults to the filesystem store under DATA_DIR', async () => {
    expect(await blobStoreFromConfig(loadConfig({}))).toBeInstanceOf(FsBlobStore);
  });

  it('BLOB_STORE=s3 needs S3_BUCKET, named in the error', () => {
    expect(() => loadConfig({ BLOB_STORE: 's3' })).toThrow(ConfigError);
    expect(() => loadConfig({ BLOB_STORE: 's3' })).toThrow(/S3_BUCKET/);
  });

  it.each([
    ['BLOB_STORE', 'nfs'],
    ['S3_ENDPOINT', 'not a url'],
    ['S3_FORCE_PATH_STYLE', 'sometimes'],
  ])('a bad %s=%s stops start-up with a message naming it', (key, value) => {
    expect(() => loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b', [key]: value })).toThrow(new RegExp(key));
  });

  it('builds an S3 store with path-style URLs for a custom endpoint unless told otherwise', async () => {
    const custom = await blobStoreFromConfig(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'http://127.0.0.1:7070' }));
    expect(custom).toBeInstanceOf(S3BlobStore);
    expect((custom as S3BlobStore).client.config.forcePathStyle).toBe(true);
    const aws = await blobStoreFromConfig(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_REGION: 'eu-west-1' }));
    expect((aws as S3BlobStore).client.config.forcePathStyle).toBe(false);
    expect(await (aws as S3BlobStore).client.config.region()).toBe('eu-west-1');
    const forced = await blobStoreFromConfig(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'http://h:1', S3_FORCE_PATH_STYLE: 'false' }));
    expect((forced as S3BlobStore).client.config.forcePathStyle).toBe(false);
  });
});
