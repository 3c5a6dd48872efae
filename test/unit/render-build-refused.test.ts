/**
 * A request the submitter cannot build into graphs (RenderService.start throws RenderFailedError 422
 * InvalidRender before starting anything) is answered as a 4xx in the route family's shape, and no render
 * exists for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RenderFailedError } from '../../src/api/render-service.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

let front: TestFront;
const buildFailed = (): RenderFailedError =>
  new RenderFailedError('render-never-started', 422, 'InvalidRender', 'render render-never-started cannot be built: cannot build the graph: no such file role');

beforeAll(async () => {
  front = await startTestFront();
});
afterAll(async () => {
  await front.close();
});

describe('a render that cannot be built', () => {
  it('txt2img: 422 in the A1111 envelope, saying why', async () => {
    front.startError = buildFailed();
    const res = await front.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', payload: { prompt: 'x', width: 64, height: 64 } });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json()).toMatchObject({ error: 'InvalidRender', detail: expect.stringContaining('cannot be built: cannot build the graph') });
    expect(front.starts).toEqual([]);
  });

  it('/v1/videos: 422 in the video error shape, saying why', async () => {
    front.startError = buildFailed();
    const res = await front.app.inject({ method: 'POST', url: '/v1/videos', payload: { prompt: 'x', size: '320x192', num_frames: 17 } });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.body).toContain('cannot be built');
    expect(front.starts).toEqual([]);
  });
});
