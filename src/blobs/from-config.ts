/** Picks the blob store the configuration names (BLOB_STORE=fs|s3); every process mode builds it here. */
import type { Config } from '../config/config.ts';
import { FsBlobStore } from './fs-store.ts';
import type { BlobStore } from './store.ts';

/**
 * The S3 store (and the AWS SDK, ~20 MB of RSS once loaded) is imported only when BLOB_STORE=s3, so the
 * default filesystem store never loads it.
 */
export async function blobStoreFromConfig(config: Config): Promise<BlobStore> {
  if (config.BLOB_STORE === 'fs') return new FsBlobStore(config.blobDir);
  if (!config.S3_BUCKET) throw new Error('S3_BUCKET is required when BLOB_STORE=s3');
  const { S3BlobStore } = await import('./s3-store.ts');
  return new S3BlobStore({
    bucket: config.S3_BUCKET,
    prefix: config.S3_PREFIX,
    client: {
      region: config.S3_REGION,
      ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
      forcePathStyle: config.S3_FORCE_PATH_STYLE ?? config.S3_ENDPOINT !== undefined,
    },
  });
}
