/**
 * `/openapi.json` covers every route the front registers, from the zod schemas the routes declare; `/docs`
 * serves Swagger UI; the declared answers are what the routes send; and a parameter or small body the type
 * provider's validator refuses is answered in the route family's own envelope, naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { DOCS_PREFIX, registeredRoutes, type RegisteredRoute } from '../../src/api/openapi.ts';
import { TEMPORAL_UI_PATH } from '../../src/api/temporal-ui-proxy.ts';
import { startTestFront, type TestFront } from '../support/front.ts';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { makePng } from '../support/fixtures.ts';

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { summary?: string; tags?: string[]; responses?: Record<string, unknown>; parameters?: { name: string; in: string }[] }>
  >;
};

/**
 * Routes registered but deliberately not in the document, and why:
 * - Swagger UI's page and assets under /docs: the viewer of this document, not part of the API.
 * - The Temporal UI proxy under /temporal: another application's pages and API, forwarded as they are.
 * - HEAD twins Fastify adds to every GET: the same route; OpenAPI documents the GET.
 */
const EXCLUDED: { what: string; matches(route: RegisteredRoute, all: readonly RegisteredRoute[]): boolean }[] = [
  { what: 'Swagger UI', matches: (r) => r.url === DOCS_PREFIX || r.url.startsWith(`${DOCS_PREFIX}/`) },
  { what: 'Temporal UI proxy', matches: (r) => r.url === TEMPORAL_UI_PATH || r.url.startsWith(`${TEMPORAL_UI_PATH}/`) },
  { what: 'HEAD twin of a GET', matches: (r, all) => r.method === 'HEAD' && all.some((o) => o.method === 'GET' && o.url === r.url) },
];

/** `/renders/:id/outputs/:n` → `/renders/{id}/outputs/{n}`. */
const specPath = (url: string): string => url.replace(/:(\w+)/g, '{$1}');

/** The registered routes (less the exclusions) that the document lacks or lists without a summary, a tag or a declared answer. */
function undocumented(routes: readonly RegisteredRoute[], doc: Doc): string[] {
  const missing: string[] = [];
  for (const r of routes) {
    if (EXCLUDED.some((e) => e.matches(r, routes))) continue;
    const op = doc.paths[specPath(r.url)]?.[r.method.toLowerCase()];
    // @fastify/swagger puts a placeholder answer on a route that declares none.
    const answers = Object.values(op?.responses ?? {}).filter((a) => (a as { description?: string }).description !== 'Default Response');
    if (!op || !op.summary || !op.tags?.length || answers.length === 0) missing.push(`${r.method} ${r.url}`);
  }
  return missing;
}

/** The answer parses with the zod schema the route declares for the status. */
function expectDeclared(routes: readonly RegisteredRoute[], method: string, url: string, status: number, body: unknown): void {
  const schema = (routes.find((r) => r.method === method && r.url === url)!.schema as { response: Record<number, z.ZodType> }).response[status]!;
  const parsed = schema.safeParse(body);
  expect(parsed.success, `${method} ${url} ${status}: ${parsed.error?.message}`).toBe(true);
}

let front: TestFront;
let doc: Doc;

beforeAll(async () => {
  // With the Temporal UI proxy, so that every kind of route the front can have is registered.
  front = await startTestFront({}, { temporalUi: { upstream: 'http://127.0.0.1:9' } });
  const res = await front.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});
afterAll(async () => {
  await front?.close();
});

describe('/openapi.json', () => {
  it('lists every registered route with a summary, a tag and its answers', () => {
    const routes = registeredRoutes(front.app);
    // The families the issue names are all there (a check that the recorder saw the routes at all).
    for (const url of [
      '/sdapi/v1/txt2img',
      '/sdapi/v1/options',
      '/v1/videos/:id/content',
      '/v1/images/edits',
      '/v1/models',
      '/renders/:id/replay',
      '/health',
      '/metrics',
    ]) {
      expect(
        routes.some((r) => r.url === url),
        url,
      ).toBe(true);
    }
    expect(doc.openapi).toBe('3.1.0');
    expect(undocumented(routes, doc)).toEqual([]);
  });

  it('each exclusion excludes something, and the document lists nothing that is not registered', () => {
    const routes = registeredRoutes(front.app);
    for (const e of EXCLUDED)
      expect(
        routes.some((r) => e.matches(r, routes)),
        e.what,
      ).toBe(true);
    const registered = new Set(routes.map((r) => `${r.method.toLowerCase()} ${specPath(r.url)}`));
    for (const [p, ops] of Object.entries(doc.paths)) for (const m of Object.keys(ops)) expect(registered.has(`${m} ${p}`), `${m} ${p}`).toBe(true);
  });

  it('the check fails for a route the document lacks', () => {
    const routes = [...registeredRoutes(front.app), { method: 'POST', url: '/sdapi/v1/not-documented', schema: undefined }];
    expect(undocumented(routes, doc)).toEqual(['POST /sdapi/v1/not-documented']);
    const bare = {
      ...doc,
      paths: { ...doc.paths, '/health': { get: { summary: 'Health', tags: ['Operations'], responses: { '200': { description: 'Default Response' } } } } },
    };
    expect(undocumented(registeredRoutes(front.app), bare)).toEqual(['GET /health']);
  });

  it('request bodies, parameters and headers come from the zod schemas', () => {
    const body = (p: string, type = 'application/json') => (doc.paths[p]!.post as any).requestBody.content[type].schema;
    expect(body('/sdapi/v1/txt2img').properties.prompt).toMatchObject({ type: 'string', maxLength: 16384 });
    expect(Object.keys(body('/sdapi/v1/img2img').properties)).toEqual(expect.arrayContaining(['init_images', 'mask', 'resize_mode']));
    expect(body('/sdapi/v1/extra-batch-images').properties).toHaveProperty('imageList');
    expect(body('/v1/videos', 'multipart/form-data').properties).toHaveProperty('num_frames');
    expect((doc.paths['/v1/videos']!.post as any).requestBody.description).toMatch(/multipart/);
    expect(body('/v1/images/edits', 'multipart/form-data').properties).toHaveProperty('mask');
    const list = doc.paths['/renders']!.get!.parameters!;
    expect(list.map((p) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['query:status', 'query:limit', 'query:cursor']));
    expect(doc.paths['/renders/{id}/outputs/{n}']!.get!.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(['path:id', 'path:n']));
    expect(doc.paths['/sdapi/v1/txt2img']!.post!.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(
      expect.arrayContaining(['header:idempotency-key', 'header:x-priority']),
    );
    // Each family's error envelope.
    const err = (p: string, m: string, s: string) => (doc.paths[p]![m]!.responses![s] as any).content['application/json'].schema;
    expect(Object.keys(err('/sdapi/v1/txt2img', 'post', '422').properties)).toEqual(expect.arrayContaining(['error', 'detail', 'body', 'errors', 'field']));
    expect(Object.keys(err('/v1/images/generations', 'post', '400').properties.error.properties)).toEqual(['message', 'type', 'param', 'code']);
    expect(err('/v1/videos', 'post', '400').properties.error.properties.code).toMatchObject({ type: 'number' });
  });
});

describe('/docs', () => {
  it('serves Swagger UI, which reads this document', async () => {
    let res = await front.app.inject({ method: 'GET', url: DOCS_PREFIX });
    if (res.statusCode === 302) res = await front.app.inject({ method: 'GET', url: String(res.headers.location) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/html/);
    expect(res.body).toMatch(/swagger/i);
    const json = await front.app.inject({ method: 'GET', url: `${DOCS_PREFIX}/json` });
    expect(json.json().paths).toEqual(doc.paths);
  });
});

describe('declared answers', () => {
  it('are what the routes send', async () => {
    const routes = registeredRoutes(front.app);
    const urls: [string, string][] = [
      ['/sdapi/v1/sd-models', '/sdapi/v1/sd-models'],
      ['/sdapi/v1/options', '/sdapi/v1/options'],
      ['/sdapi/v1/samplers', '/sdapi/v1/samplers'],
      ['/sdapi/v1/schedulers', '/sdapi/v1/schedulers'],
      ['/sdapi/v1/upscalers', '/sdapi/v1/upscalers'],
      ['/sdapi/v1/latent-upscale-modes', '/sdapi/v1/latent-upscale-modes'],
      ['/sdapi/v1/loras', '/sdapi/v1/loras'],
      ['/sdapi/v1/memory', '/sdapi/v1/memory'],
      ['/sdapi/v1/scripts', '/sdapi/v1/scripts'],
      ['/sdapi/v1/embeddings', '/sdapi/v1/embeddings'],
      ['/sdapi/v1/progress', '/sdapi/v1/progress?skip_current_image=true'],
      ['/v1/models', '/v1/models'],
      ['/v1/models/:id', '/v1/models/flux-schnell'],
      ['/health', '/health'],
      ['/ready', '/ready'],
      ['/internal/ping', '/internal/ping'],
    ];
    for (const [url, request] of urls) {
      const res = await front.app.inject({ method: 'GET', url: request });
      expect(res.statusCode, `${request}: ${res.body}`).toBe(200);
      expectDeclared(routes, 'GET', url, 200, res.json());
    }
  });

  it('are what the render routes send, errors included', async () => {
    const routes = registeredRoutes(front.app);
    const blobs = new FsBlobStore(front.blobDir);
    front.outcome = async (started) => {
      const request = front.starts.at(-1)!.request;
      const output = await blobs.put(
        makePng(request.width, request.height, () => [200, 10, 10, 255]),
        { mime: 'image/png', width: request.width, height: request.height },
      );
      return {
        renderId: started.renderId,
        outputs: [output],
        seeds: [request.seed],
        request,
        backend: 'comfyui-0',
        promptIds: [],
        timings: [],
      } satisfies RenderResult;
    };
    const t2i = await front.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', payload: { prompt: 'a lighthouse', width: 64, height: 64, steps: 1 } });
    expect(t2i.statusCode, t2i.body).toBe(200);
    expectDeclared(routes, 'POST', '/sdapi/v1/txt2img', 200, t2i.json());
    const gen = await front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: 'a lighthouse', size: '64x64' } });
    expect(gen.statusCode, gen.body).toBe(200);
    expectDeclared(routes, 'POST', '/v1/images/generations', 200, gen.json());
    const badA1111 = await front.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', payload: { prompt: 'x', steps: 'many' } });
    expect(badA1111.statusCode).toBe(422);
    expectDeclared(routes, 'POST', '/sdapi/v1/txt2img', 422, badA1111.json());
    const badOpenAi = await front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: 'x', n: 'many' } });
    expect(badOpenAi.statusCode).toBe(400);
    expectDeclared(routes, 'POST', '/v1/images/generations', 400, badOpenAi.json());
    const badVideo = await front.app.inject({ method: 'POST', url: '/v1/videos', payload: { prompt: 'x', num_frames: 'many' } });
    expect(badVideo.statusCode).toBe(400);
    expectDeclared(routes, 'POST', '/v1/videos', 400, badVideo.json());
  });
});

describe('parameters the type provider checks', () => {
  it('are refused in the route family envelope, naming the field', async () => {
    const renders = await front.app.inject({ method: 'GET', url: '/renders?limit=0' });
    expect(renders.statusCode).toBe(400);
    expect(renders.json()).toMatchObject({ error: 'HTTPException', field: 'limit', detail: expect.stringMatching(/^limit: /), body: '' });
    expect((await front.app.inject({ method: 'GET', url: '/renders?status=exploded' })).json()).toMatchObject({ field: 'status' });
    const injected = await front.app.inject({ method: 'GET', url: `/renders?model=${encodeURIComponent("x' OR 1=1")}` });
    expect(injected.statusCode).toBe(400);
    expect(injected.json()).toMatchObject({ field: 'model' });
    const id = await front.app.inject({ method: 'GET', url: '/renders/%01' });
    expect(id.statusCode).toBe(400);
    expect(id.json()).toMatchObject({ field: 'id', detail: 'id: not a render id' });
    const videos = await front.app.inject({ method: 'GET', url: '/v1/videos?order=sideways' });
    expect(videos.statusCode).toBe(400);
    expect(videos.json().error).toMatchObject({ param: 'order', type: 'invalid_request_error', code: 400 });
    // A small body the provider validates (the replay options), and one it must not (a render's: the route
    // validates it after the body gate, with A1111's 422 for a type error).
    const replay = await front.app.inject({ method: 'POST', url: '/renders/render-x/replay', payload: { newSeed: 'yes' } });
    expect(replay.statusCode).toBe(400);
    expect(replay.json()).toMatchObject({ error: 'HTTPException', field: 'newSeed' });
    const stray = await front.app.inject({ method: 'POST', url: '/renders/render-x/replay', payload: { seed: 1 } });
    expect(stray.statusCode).toBe(400);
    expect(stray.json()).toMatchObject({ field: 'body' });
    const typeError = await front.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', payload: { prompt: 'x', steps: 'many', unknown_field: 1 } });
    expect(typeError.statusCode).toBe(422);
    expect(typeError.json()).toMatchObject({ field: 'steps' });
    const video = await front.app.inject({ method: 'DELETE', url: '/v1/videos/%7F' });
    expect(video.statusCode).toBe(400);
    expect(video.json().error).toMatchObject({ param: 'id', code: 400 });
  });
});
