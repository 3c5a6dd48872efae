/**
 * The one blob store test suite: every BlobStore implementation runs exactly these tests (blob-store.test.ts).
 * `open()` gives a store and a second store over the same storage (another host's view); `leftovers()` lists
 * staging objects a failed put must not leave behind; `plant(key)` (optional) writes a file or object that is
 * not a blob where blobs live, which the inventory must not list.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BlobNotFoundError, type BlobStore } from '../../src/blobs/store.ts';

export interface StoreUnderTest {
  store: BlobStore;
  otherHost: BlobStore;
  leftovers: () => Promise<string[]>;
  /** Puts something that is not a blob (a stray name) where blobs live: `relative` under the blob root. */
  plantStray: (relative: string) => Promise<void>;
}

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** `total` bytes of deterministic pseudo-random data in `chunk`-sized pieces, made as they are pulled. */
async function* generated(total: number, chunk: number, seed: number): AsyncGenerator<Buffer> {
  let state = seed >>> 0;
  for (let sent = 0; sent < total; sent += chunk) {
    const n = Math.min(chunk, total - sent);
    const buf = Buffer.allocUnsafe(n + 3);
    for (let i = 0; i < n; i += 4) {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      buf.writeUInt32LE(state, i);
    }
    yield buf.subarray(0, n);
  }
}

async function inventory(store: BlobStore): Promise<Map<string, { size: number; storedAtMs: number }>> {
  const out = new Map<string, { size: number; storedAtMs: number }>();
  for await (const b of store.list()) out.set(b.sha256, { size: b.size, storedAtMs: b.storedAtMs });
  return out;
}

async function digestOf(source: AsyncIterable<Buffer>): Promise<{ sha256: string; size: number }> {
  const h = createHash('sha256');
  let size = 0;
  for await (const c of source) {
    h.update(c);
    size += c.length;
  }
  return { sha256: h.digest('hex'), size };
}

export function blobStoreSuite(name: string, open: () => StoreUnderTest): void {
  describe(`${name} blob store`, () => {
    it('stores bytes under their sha256 and returns them with the meta in the ref', async () => {
      const { store } = open();
      const bytes = randomBytes(1234);
      const ref = await store.put(bytes, { mime: 'image/png', width: 16, height: 8 });
      expect(ref).toEqual({ sha256: sha(bytes), size: 1234, mime: 'image/png', width: 16, height: 8 });
      expect(await store.has(ref.sha256)).toBe(true);
      expect(await store.size(ref.sha256)).toBe(1234);
      expect(Buffer.compare(await store.get(ref.sha256), bytes)).toBe(0);
    });

    it('leaves out dims it was not given', async () => {
      const { store } = open();
      const ref = await store.put(randomBytes(10), { mime: 'image/jpeg' });
      expect(Object.keys(ref).sort()).toEqual(['mime', 'sha256', 'size']);
    });

    it('treats a re-put of the same bytes as a no-op with the same address, also when racing', async () => {
      const { store } = open();
      const bytes = randomBytes(5000);
      const refs = await Promise.all([
        store.put(bytes, { mime: 'image/png' }),
        store.put(bytes, { mime: 'image/png' }),
        store.putStream([bytes.subarray(0, 100), bytes.subarray(100)], { mime: 'image/png' }),
      ]);
      expect(new Set(refs.map((r) => r.sha256)).size).toBe(1);
      expect(Buffer.compare(await store.get(refs[0].sha256), bytes)).toBe(0);
    });

    it('stores an empty blob', async () => {
      const { store } = open();
      const ref = await store.putStream([], { mime: 'application/octet-stream' });
      expect(ref.size).toBe(0);
      expect(ref.sha256).toBe(sha(Buffer.alloc(0)));
      expect((await store.get(ref.sha256)).length).toBe(0);
    });

    it('streams a blob larger than one multipart part in and out, hashing as it goes', async () => {
      const { store } = open();
      const total = 20 * 1024 * 1024 + 12345;
      const expected = await digestOf(generated(total, 1024 * 1024, 7));
      const ref = await store.putStream(generated(total, 1024 * 1024, 7), { mime: 'video/mp4' });
      expect({ sha256: ref.sha256, size: ref.size }).toEqual(expected);
      expect(await store.size(ref.sha256)).toBe(total);
      expect(await digestOf(await store.openRead(ref.sha256))).toEqual(expected);
    });

    it('reads byte ranges, inclusive as in HTTP, and refuses ranges outside the blob', async () => {
      const { store } = open();
      const bytes = randomBytes(4096);
      const ref = await store.put(bytes, { mime: 'video/mp4' });
      const read = async (start: number, end?: number): Promise<Buffer> => {
        const chunks: Buffer[] = [];
        for await (const c of await store.openRead(ref.sha256, { start, end })) chunks.push(c as Buffer);
        return Buffer.concat(chunks);
      };
      expect(Buffer.compare(await read(0, 0), bytes.subarray(0, 1))).toBe(0);
      expect(Buffer.compare(await read(100, 199), bytes.subarray(100, 200))).toBe(0);
      expect(Buffer.compare(await read(4000), bytes.subarray(4000))).toBe(0);
      await expect(store.openRead(ref.sha256, { start: 10, end: 4096 })).rejects.toThrow(RangeError);
      await expect(store.openRead(ref.sha256, { start: 20, end: 10 })).rejects.toThrow(RangeError);
    });

    it('hands a blob out as a Blob (what uploads to ComfyUI send) with its bytes and the MIME type asked for', async () => {
      const { store } = open();
      const bytes = randomBytes(300_000);
      const ref = await store.put(bytes, { mime: 'image/png' });
      const blob = await store.getBlob(ref.sha256, 'image/png');
      expect(blob.size).toBe(bytes.length);
      expect(blob.type).toBe('image/png');
      expect(Buffer.compare(Buffer.from(await blob.arrayBuffer()), bytes)).toBe(0);
    });

    it('reports a missing blob as BlobNotFoundError, false and undefined', async () => {
      const { store } = open();
      const missing = sha(randomBytes(32));
      await expect(store.get(missing)).rejects.toBeInstanceOf(BlobNotFoundError);
      await expect(store.openRead(missing)).rejects.toBeInstanceOf(BlobNotFoundError);
      await expect(store.openRead(missing, { start: 0 })).rejects.toBeInstanceOf(BlobNotFoundError);
      await expect(store.getBlob(missing)).rejects.toBeInstanceOf(BlobNotFoundError);
      expect(await store.has(missing)).toBe(false);
      expect(await store.size(missing)).toBeUndefined();
    });

    it('refuses addresses that are not a sha256 (no path or key tricks)', async () => {
      const { store } = open();
      for (const bad of ['../../etc/passwd', 'ab', sha(Buffer.from('x')).toUpperCase(), `${sha(Buffer.from('x'))}/..`]) {
        await expect(store.get(bad)).rejects.toThrow(/not a sha256/);
        await expect(store.has(bad)).rejects.toThrow(/not a sha256/);
        await expect(store.getBlob(bad)).rejects.toThrow(/not a sha256/);
      }
    });

    it('stores nothing and leaves no staging object when the source fails mid-stream', async () => {
      const { store, leftovers } = open();
      const marker = randomBytes(64);
      async function* failing(): AsyncGenerator<Buffer> {
        yield marker;
        yield* generated(9 * 1024 * 1024, 1024 * 1024, 3);
        throw new Error('client went away');
      }
      await expect(store.putStream(failing(), { mime: 'video/mp4' })).rejects.toThrow('client went away');
      expect(await leftovers()).toEqual([]);
      expect(await store.has(sha(marker))).toBe(false);
    });

    it('shares blobs with another process over the same storage', async () => {
      const { store, otherHost } = open();
      const bytes = randomBytes(777);
      const ref = await store.put(bytes, { mime: 'image/webp' });
      expect(await otherHost.has(ref.sha256)).toBe(true);
      expect(Buffer.compare(await otherHost.get(ref.sha256), bytes)).toBe(0);
    });

    it('lists every blob with its size and age, and nothing that is not a blob', async () => {
      const { store, otherHost, plantStray } = open();
      const before = Date.now();
      const a = await store.put(randomBytes(300), { mime: 'image/png' });
      const b = await store.putStream([randomBytes(70), randomBytes(30)], { mime: 'video/mp4' });
      const after = Date.now();
      const stray = sha(randomBytes(8));
      await plantStray(`${stray.slice(0, 2)}/${stray}.partial`);
      await plantStray(`zz/${stray}`);
      const listed = await inventory(otherHost);
      expect(listed.get(a.sha256)?.size).toBe(300);
      expect(listed.get(b.sha256)?.size).toBe(100);
      for (const ref of [a, b]) {
        // Stores keep whole seconds (S3's LastModified) or better: the age is within a second of the put.
        const at = listed.get(ref.sha256)!.storedAtMs;
        expect(at).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
        expect(at).toBeLessThanOrEqual(after + 1000);
      }
      for (const key of listed.keys()) expect(key).toMatch(/^[0-9a-f]{64}$/);
      expect(listed.has(stray)).toBe(false);
    });

    it('a re-put makes an existing blob young again (prune must not delete what a running render just stored)', async () => {
      const { store, otherHost } = open();
      const bytes = randomBytes(400);
      const first = await store.put(bytes, { mime: 'image/png' });
      const firstAt = (await inventory(otherHost)).get(first.sha256)!.storedAtMs;
      // Stores keep whole seconds (S3): let the clock pass the next whole second before storing again.
      while (Date.now() < Math.floor(firstAt / 1000) * 1000 + 2000) await new Promise((r) => setTimeout(r, 100));
      await store.putStream([bytes], { mime: 'image/png' });
      const streamedAt = (await inventory(otherHost)).get(first.sha256)!.storedAtMs;
      expect(streamedAt).toBeGreaterThan(firstAt);
      while (Date.now() < Math.floor(streamedAt / 1000) * 1000 + 2000) await new Promise((r) => setTimeout(r, 100));
      await store.put(bytes, { mime: 'image/png' });
      expect((await inventory(otherHost)).get(first.sha256)!.storedAtMs).toBeGreaterThan(streamedAt);
      expect(Buffer.compare(await otherHost.get(first.sha256), bytes)).toBe(0);
    });

    it('deletes blobs in one call (missing ones are no error), and another host sees them gone', async () => {
      const { store, otherHost } = open();
      const refs = await Promise.all([0, 1, 2].map(() => store.put(randomBytes(50), { mime: 'image/png' })));
      const keep = await store.put(randomBytes(51), { mime: 'image/png' });
      const missing = sha(randomBytes(16));
      await store.delete([refs[0]!.sha256, refs[1]!.sha256, refs[2]!.sha256, missing]);
      for (const r of refs) {
        expect(await otherHost.has(r.sha256)).toBe(false);
        await expect(otherHost.get(r.sha256)).rejects.toBeInstanceOf(BlobNotFoundError);
      }
      expect(await otherHost.has(keep.sha256)).toBe(true);
      const listed = await inventory(otherHost);
      for (const r of refs) expect(listed.has(r.sha256)).toBe(false);
      expect(listed.has(keep.sha256)).toBe(true);
      // Deleted bytes can be stored again under the same address.
      const again = await store.put(await otherHost.get(keep.sha256), { mime: 'image/png' });
      expect(again.sha256).toBe(keep.sha256);
      await store.delete([]);
    });

    it('refuses to delete addresses that are not a sha256, deleting none of the batch', async () => {
      const { store } = open();
      const ref = await store.put(randomBytes(40), { mime: 'image/png' });
      await expect(store.delete([ref.sha256, '../../etc/passwd'])).rejects.toThrow(/not a sha256/);
      expect(await store.has(ref.sha256)).toBe(true);
    });

    it('lists a store larger than one listing page (S3 pages at 1000 keys)', async () => {
      const { store } = open();
      const bytes = Array.from({ length: 1010 }, (_, i) => Buffer.from(`page-test-${i}-${Math.random()}`));
      const refs: string[] = [];
      for (let i = 0; i < bytes.length; i += 50) {
        refs.push(...(await Promise.all(bytes.slice(i, i + 50).map((b) => store.put(b, { mime: 'text/plain' })))).map((r) => r.sha256));
      }
      const listed = await inventory(store);
      expect(refs.filter((r) => !listed.has(r))).toEqual([]);
      await store.delete(refs);
      const after = await inventory(store);
      expect(refs.filter((r) => after.has(r))).toEqual([]);
    }, 60_000);
  });
}
