/**
 * The video routes in-process with a stubbed render service: the sync timeout (504, render cancelled) and
 * the error shape, without Temporal.
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerVideos } from '../../src/api/routes/videos.ts';
import type { ApiContext } from '../../src/api/server.ts';
import { InFlight } from '../../src/api/in-flight.ts';
import { loadConfig } from '../../src/config/config.ts';

const cancelled: string[] = [];
const app = Fastify();

beforeAll(async () => {
  const config = loadConfig({ VIDEO_SYNC_TIMEOUT_S: '1', DATA_DIR: '/tmp/cd-video-routes' });
  const renders = {
    start: async () => ({
      renderId: 'render-stub',
      attached: false,
      handle: { cancel: async () => void cancelled.push('render-stub') },
    }),
    // A render that never finishes.
    wait: () => new Promise(() => undefined),
  };
  const ctx = { config, logger: undefined, blobs: { put: async () => undefined }, renders, inFlight: new InFlight() } as unknown as ApiContext;
  await registerVideos(app, ctx);
  await app.ready();
});
afterAll(async () => {
  await app.close();
});

describe('POST /v1/videos/sync', () => {
  it('answers 504 "timed out after Ns" once VIDEO_SYNC_TIMEOUT_S passes, and cancels the render', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/videos/sync', payload: { prompt: 'never ends', size: '320x192', num_frames: 17 } });
    expect(res.statusCode).toBe(504);
    expect(res.json()).toMatchObject({ detail: 'Video generation timed out after 1s.', error: { code: 504 }, render_id: 'render-stub' });
    expect(res.headers['x-render-id']).toBe('render-stub');
    expect(res.headers['x-request-id']).toMatch(/^video_sync-/);
    expect(cancelled).toEqual(['render-stub']);
  });

  it('thumbnail/spritesheet variants and remix: a 400 saying they are not offered', async () => {
    for (const variant of ['thumbnail', 'spritesheet']) {
      const res = await app.inject({ method: 'GET', url: `/v1/videos/render-x/content?variant=${variant}` });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: { param: 'variant', type: 'invalid_request_error' } });
      expect(res.json().detail).toMatch(/is not offered; only "video"/);
    }
    const remix = await app.inject({ method: 'POST', url: '/v1/videos/render-x/remix', payload: { prompt: 'again' } });
    expect(remix.statusCode).toBe(400);
    expect(remix.json().detail).toMatch(/^remix is not offered/);
  });

  it('bad input: FastAPI detail plus an OpenAI-style error naming the field; unsupported body types 415', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/videos', payload: { prompt: 'x', size: 'huge' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: { param: 'size', type: 'invalid_request_error', code: 400 } });
    expect(res.json().detail).toMatch(/^size: must be WIDTHxHEIGHT/);
    const xml = await app.inject({ method: 'POST', url: '/v1/videos', payload: '<x/>', headers: { 'content-type': 'application/xml' } });
    expect(xml.statusCode).toBe(415);
    const urlencoded = await app.inject({ method: 'POST', url: '/v1/videos', payload: 'prompt=x&fps=500', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(urlencoded.statusCode).toBe(400);
    expect(urlencoded.json().error.param).toBe('fps');
  });
});
