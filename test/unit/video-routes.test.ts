/**
 * The video routes in-process (the whole front, Temporal stood in for): the sync timeout (504, render
 * cancelled), the error shape, and that a video goes through the same submission rules as an image:
 * admission (MAX_WAITING_RENDERS) and the Idempotency-Key check come before any input image is stored.
 */
import { existsSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { redSquare } from '../support/fixtures.ts';
import { startTestFront, type TestFront, type TestFrontOptions } from '../support/front.ts';

const fronts: TestFront[] = [];
async function front(env: Record<string, string> = {}, opts: TestFrontOptions = {}): Promise<TestFront> {
  const f = await startTestFront({ VIDEO_SYNC_TIMEOUT_S: '1', ...env }, opts);
  fronts.push(f);
  return f;
}
afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});

const blobCount = (f: TestFront): number =>
  existsSync(f.blobDir) ? readdirSync(f.blobDir, { recursive: true }).filter((n) => /[0-9a-f]{64}$/.test(String(n))).length : 0;
const video = (extra: Record<string, unknown> = {}) => ({ prompt: 'a red square', size: '320x192', num_frames: 17, ...extra });
const withImage = (extra: Record<string, unknown> = {}) => video({ input_reference: redSquare(64).toString('base64'), ...extra });

describe('POST /v1/videos/sync', () => {
  it('answers 504 "timed out after Ns" once VIDEO_SYNC_TIMEOUT_S passes, and cancels the render', async () => {
    const f = await front();
    f.outcome = () => new Promise(() => undefined); // a render that never finishes
    const res = await f.app.inject({ method: 'POST', url: '/v1/videos/sync', payload: video({ prompt: 'never ends' }) });
    expect(res.statusCode).toBe(504);
    const renderId = String(res.headers['x-render-id']);
    expect(renderId).toMatch(/^render-/);
    expect(res.json()).toMatchObject({ detail: 'Video generation timed out after 1s.', error: { code: 504 }, render_id: renderId });
    expect(res.headers['x-request-id']).toMatch(/^video_sync-/);
    expect(f.cancelled).toEqual([renderId]);
  });

  it('thumbnail/spritesheet variants and remix: a 400 saying they are not offered', async () => {
    const f = await front();
    for (const variant of ['thumbnail', 'spritesheet']) {
      const res = await f.app.inject({ method: 'GET', url: `/v1/videos/render-x/content?variant=${variant}` });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: { param: 'variant', type: 'invalid_request_error' } });
      expect(res.json().detail).toMatch(/is not offered; only "video"/);
    }
    const remix = await f.app.inject({ method: 'POST', url: '/v1/videos/render-x/remix', payload: { prompt: 'again' } });
    expect(remix.statusCode).toBe(400);
    expect(remix.json().detail).toMatch(/^remix is not offered/);
  });

  it('bad input: FastAPI detail plus an OpenAI-style error naming the field; a body no parser reads is a 400 on `body`', async () => {
    const f = await front();
    const res = await f.app.inject({ method: 'POST', url: '/v1/videos', payload: { prompt: 'x', size: 'huge' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { param: 'size', type: 'invalid_request_error', code: 400 } });
    expect(res.json().detail).toMatch(/^size: must be WIDTHxHEIGHT/);
    const xml = await f.app.inject({ method: 'POST', url: '/v1/videos', payload: '<x/>', headers: { 'content-type': 'application/xml' } });
    // The front reads any content type as JSON (A1111 clients send text/plain or none): XML is invalid JSON.
    expect(xml.statusCode).toBe(400);
    expect(xml.json().error.param).toBe('body');
    const urlencoded = await f.app.inject({
      method: 'POST',
      url: '/v1/videos',
      payload: 'prompt=x&fps=500',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(urlencoded.statusCode).toBe(400);
    expect(urlencoded.json().error.param).toBe('fps');
  });
});

describe('video admission (MAX_WAITING_RENDERS; before, /v1/videos skipped it)', () => {
  it('past the bound: 503 with Retry-After in the video error shape, no input image stored, nothing started', async () => {
    const f = await front({ MAX_WAITING_RENDERS: '2' }, { waitingRenders: async () => 2 });
    for (const url of ['/v1/videos', '/v1/videos/sync']) {
      const res = await f.app.inject({ method: 'POST', url, payload: withImage() });
      expect(res.statusCode, url).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.json()).toMatchObject({ error: { code: 503, type: 'server_error' }, limit: 2, waiting: 2 });
      expect(res.json().detail).toMatch(/MAX_WAITING_RENDERS/);
    }
    expect(blobCount(f)).toBe(0);
    expect(f.starts).toHaveLength(0);
  });

  it('under the bound the same request is started, its input image stored', async () => {
    const f = await front({ MAX_WAITING_RENDERS: '2' }, { waitingRenders: async () => 1 });
    const res = await f.app.inject({ method: 'POST', url: '/v1/videos', payload: withImage() });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ object: 'video', status: 'queued' });
    expect(f.starts).toHaveLength(1);
    expect(blobCount(f)).toBe(1);
  });
});

describe('video Idempotency-Key', () => {
  it('a key reused with another body is a 409 naming the header, and stores nothing (before, the images were stored first)', async () => {
    const f = await front();
    const headers = { 'idempotency-key': 'v-1' };
    const first = await f.app.inject({ method: 'POST', url: '/v1/videos', headers, payload: video() });
    expect(first.statusCode).toBe(200);
    const conflict = await f.app.inject({ method: 'POST', url: '/v1/videos', headers, payload: withImage({ prompt: 'another prompt' }) });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json()).toMatchObject({ error: { param: 'Idempotency-Key', code: 409 } });
    expect(blobCount(f)).toBe(0);
    expect(f.starts).toHaveLength(1);
  });

  it('the async and the sync route start the same render: a retry on the other one attaches', async () => {
    const f = await front();
    const headers = { 'idempotency-key': 'v-2' };
    const queued = await f.app.inject({ method: 'POST', url: '/v1/videos', headers, payload: video() });
    expect(queued.statusCode).toBe(200);
    f.outcome = () => new Promise(() => undefined);
    const sync = await f.app.inject({ method: 'POST', url: '/v1/videos/sync', headers, payload: video() });
    expect(sync.headers['x-render-id']).toBe(queued.headers['x-render-id']);
    expect(f.starts.map((s) => s.opts.fingerprint)).toEqual([f.starts[0]!.opts.fingerprint, f.starts[0]!.opts.fingerprint]);
  });
});
