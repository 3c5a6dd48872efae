/** FsBlobStore streaming: hashed while written, content-addressed like put(), nothing left behind on failure. */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { BlobNotFoundError, BlobTooLargeError } from '../../src/blobs/store.ts';

/** `n` chunks of 1 MiB, generated on the fly (the test never holds the whole stream either). */
async function* chunks(n: number, seed: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < n; i++) yield Buffer.alloc(1024 * 1024, (seed + i) % 251);
}

function sha(n: number, seed: number): string {
  const h = createHash('sha256');
  for (let i = 0; i < n; i++) h.update(Buffer.alloc(1024 * 1024, (seed + i) % 251));
  return h.digest('hex');
}

describe('FsBlobStore streams', () => {
  it('putStream stores under the sha256 of the bytes; openRead reads them back; the same bytes via put() are the same blob', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-blobs-'));
    const store = new FsBlobStore(dir);
    const ref = await store.putStream(chunks(24, 3), { mime: 'video/mp4', width: 320, height: 192 });
    expect(ref).toEqual({ sha256: sha(24, 3), size: 24 * 1024 * 1024, mime: 'video/mp4', width: 320, height: 192 });
    const h = createHash('sha256');
    let size = 0;
    for await (const c of await store.openRead(ref.sha256)) {
      h.update(c);
      size += c.length;
    }
    expect([h.digest('hex'), size]).toEqual([ref.sha256, ref.size]);
    const small = Buffer.from('same bytes');
    const a = await store.put(small, { mime: 'video/mp4' });
    const b = await store.putStream(
      (async function* () {
        yield small;
      })(),
      { mime: 'video/mp4' },
    );
    expect(b.sha256).toBe(a.sha256);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('a stream over maxBytes fails and leaves no file; a missing blob is BlobNotFoundError', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-blobs-'));
    const store = new FsBlobStore(dir);
    await expect(store.putStream(chunks(4, 1), { mime: 'video/mp4' }, { maxBytes: 2 * 1024 * 1024 })).rejects.toBeInstanceOf(BlobTooLargeError);
    // No file anywhere: neither a blob nor the staging file (the empty staging folder may stay).
    expect(readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())).toEqual([]);
    await expect(store.openRead('0'.repeat(64))).rejects.toBeInstanceOf(BlobNotFoundError);
  });
});
