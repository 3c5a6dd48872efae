/**
 * The OpenAI image routes in-process (the real front, a stand-in for Temporal): request translation, the
 * answer's shape, leniency, and OpenAI's error envelope on every /v1/* error, the front's guards included.
 */
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { imagesResponse } from '../../src/api/openai/response.ts';
import { toOpenAiEnvelope } from '../../src/api/openai/errors.ts';
import { knownModelNames, listProfiles } from '../../src/models/registry.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { makePng, redSquare } from '../support/fixtures.ts';
import { startTestFront, type TestFront } from '../support/front.ts';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { expectImageRender } from '../../src/contracts/render.ts';

let front: TestFront;

/** A finished render whose outputs are real PNGs in the front's blob store, one per requested image. */
async function succeed(f: TestFront): Promise<void> {
  const blobs = new FsBlobStore(f.blobDir);
  f.outcome = async (started) => {
    const request = expectImageRender(f.starts.at(-1)!.request);
    const count = request.batchSize * request.nIter;
    const outputs = [];
    for (let i = 0; i < count; i++) {
      const bytes = makePng(request.width, request.height, () => [i * 40, 10, 10, 255]);
      outputs.push(await blobs.put(bytes, { mime: 'image/png', width: request.width, height: request.height }));
    }
    const seeds = outputs.map((_, i) => request.seed + i);
    return { renderId: started.renderId, outputs, seeds, request, backend: 'comfyui-0', promptIds: [], timings: [] } satisfies RenderResult;
  };
}

function multipart(parts: { name: string; value: string | Buffer; filename?: string; type?: string }[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = '----cdtest' + Math.random().toString(16).slice(2);
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.filename ? `Content-Type: ${p.type ?? 'image/png'}\r\n` : ''}\r\n`));
    chunks.push(typeof p.value === 'string' ? Buffer.from(p.value) : p.value);
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const expectOpenAiError = (res: { statusCode: number; json(): any }, status: number, param: string | null, type: string, message?: RegExp): void => {
  expect(res.statusCode).toBe(status);
  const body = res.json();
  expect(body.error).toMatchObject({ type, param });
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  if (message) expect(body.error.message).toMatch(message);
};

beforeAll(async () => {
  front = await startTestFront({ MAX_IMAGE_BYTES: String(256 * 1024) });
  await succeed(front);
});
afterAll(async () => {
  await front?.close();
});

describe('GET /v1/models', () => {
  it("lists every profile, image and video, in OpenAI's list shape", async () => {
    const res = await front.app.inject({ method: 'GET', url: '/v1/models' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(listProfiles().map((p) => p.id));
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining(['imagegen-flux-kontext', 'videogen-wan22-5b']));
    for (const m of body.data) expect(m).toEqual({ id: m.id, object: 'model', created: expect.any(Number), owned_by: 'comfy-durable' });
    const one = await front.app.inject({ method: 'GET', url: '/v1/models/flux-kontext' });
    expect(one.json()).toMatchObject({ id: 'imagegen-flux-kontext', object: 'model' });
    expectOpenAiError(await front.app.inject({ method: 'GET', url: '/v1/models/nope' }), 404, 'model', 'not_found_error', /does not exist/);
  });
});

describe('/openapi.json', () => {
  it('describes the OpenAI routes from the schemas they validate with', async () => {
    const doc = (await front.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const gen = doc.paths['/v1/images/generations'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(gen.properties)).toEqual(
      expect.arrayContaining(['model', 'prompt', 'n', 'size', 'response_format', 'seed', 'negative_prompt', 'steps', 'guidance', 'cfg_scale']),
    );
    const edit = doc.paths['/v1/images/edits'].post.requestBody.content['multipart/form-data'].schema;
    expect(Object.keys(edit.properties)).toEqual(expect.arrayContaining(['image', 'mask', 'prompt', 'strength', 'seed']));
    expect(doc.paths['/v1/models'].get).toBeDefined();
  });
});

describe('POST /v1/images/generations', () => {
  it('renders with the seed, size, n and extensions asked for, and answers in OpenAI shape with the seeds', async () => {
    const res = await front.app.inject({
      method: 'POST',
      url: '/v1/images/generations',
      payload: {
        model: 'imagegen-flux-schnell',
        prompt: 'a lighthouse',
        n: 2,
        size: '512x256',
        seed: 42,
        steps: 3,
        negative_prompt: 'fog',
        response_format: 'b64_json',
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const request = expectImageRender(front.starts.at(-1)!.request);
    expect(request).toMatchObject({
      model: 'imagegen-flux-schnell',
      prompt: 'a lighthouse',
      seed: 42,
      steps: 3,
      width: 512,
      height: 256,
      batchSize: 2,
      nIter: 1,
      kind: 'txt2img',
    });
    const body = res.json();
    expect(body.created).toBeGreaterThan(1_700_000_000);
    expect(body.data).toHaveLength(2);
    expect(body.data.map((d: { seed: number }) => d.seed)).toEqual([42, 43]);
    expect(body.data[0]).not.toHaveProperty('revised_prompt');
    expect(body.data[0]).not.toHaveProperty('url');
    const png = PNG.sync.read(Buffer.from(body.data[1].b64_json, 'base64'));
    expect([png.width, png.height]).toEqual([512, 256]);
    expect(body.output_format).toBe('png');
    // Flux schnell runs at CFG 1: the negative prompt is said to be ignored, in the client's field name.
    expect(body.warnings.join('\n')).toMatch(/negative_prompt: ignored/);
    expect(res.headers['x-render-id']).toBe(body.render_id);
  });

  it('accepts what OpenAI has but this service does not apply, and says so; auto values and user need no word', async () => {
    const res = await front.app.inject({
      method: 'POST',
      url: '/v1/images/generations',
      payload: {
        model: 'imagegen-flux-schnell',
        prompt: 'x',
        size: 'auto',
        quality: 'hd',
        style: 'vivid',
        background: 'auto',
        moderation: 'low',
        user: 'u1',
        n: null,
        made_up: 1,
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const w = res.json().warnings.join('\n');
    expect(w).toMatch(/quality: "hd" accepted but not applied/);
    expect(w).toMatch(/style: "vivid" accepted but not applied/);
    expect(w).toMatch(/moderation: "low" accepted but not applied/);
    expect(w).toMatch(/made_up: unknown field; ignored/);
    expect(w).not.toMatch(/background|user/);
    // size auto: the model's default size.
    expect(front.starts.at(-1)!.request).toMatchObject({ width: 512, height: 512 });
  });

  it("maps guidance to the model's own knob (Flux distilled guidance, else CFG) and OpenAI model names to the default", async () => {
    await front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { model: 'imagegen-flux-dev', prompt: 'x', guidance: 5 } });
    expect(front.starts.at(-1)!.request).toMatchObject({ guidance: 5, cfg: 1 });
    await front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { model: 'imagegen-qwen-image', prompt: 'x', guidance: 4 } });
    expect(front.starts.at(-1)!.request).toMatchObject({ cfg: 4 });
    const res = await front.app.inject({
      method: 'POST',
      url: '/v1/images/generations',
      payload: { model: 'dall-e-3', prompt: 'x', output_format: 'webp', output_compression: 70 },
    });
    expect(res.statusCode).toBe(200);
    expect(front.starts.at(-1)!.request).toMatchObject({ model: 'imagegen-flux-schnell', output: { format: 'webp', quality: 70 } });
    expect(res.json().warnings.join('\n')).toMatch(/model: "dall-e-3" is OpenAI's; rendered with imagegen-flux-schnell/);
  });

  it("reads sd-server's <sd_cpp_extra_args> from the prompt, and reports the prompt rendered as revised_prompt", async () => {
    const tag = '<sd_cpp_extra_args>{"seed":9,"sample_params":{"sample_steps":3,"sample_method":"euler","guidance":{"txt_cfg":4}},"eta":1}</sd_cpp_extra_args>';
    const res = await front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { model: 'imagegen-qwen-image', prompt: `a fox ${tag}` } });
    expect(res.statusCode, res.body).toBe(200);
    expect(front.starts.at(-1)!.request).toMatchObject({ prompt: 'a fox', seed: 9, steps: 3, cfg: 4, sampler: 'euler' });
    expect(res.json().data[0]).toMatchObject({ revised_prompt: 'a fox', seed: 9 });
    expect(res.json().warnings).toContain('sd_cpp_extra_args.eta: not applied by this service');
    const both = await front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: `x ${tag}`, seed: 1 } });
    expect(front.starts.at(-1)!.request.seed).toBe(1);
    expect(both.json().warnings.join('\n')).toMatch(/seed not applied; the request's own seed wins/);
    const bad = await front.app.inject({
      method: 'POST',
      url: '/v1/images/generations',
      payload: { prompt: 'x <sd_cpp_extra_args>{seed</sd_cpp_extra_args>' },
    });
    expectOpenAiError(bad, 400, 'prompt', 'invalid_request_error', /not valid JSON/);
  });

  it('answers url: a link the service serves, through PUBLIC_URL, or forwarded headers only when trusted (issue 27 M3)', async () => {
    const res = await front.app.inject({
      method: 'POST',
      url: '/v1/images/generations',
      headers: { host: '127.0.0.1:7860', 'x-forwarded-proto': 'https', 'x-forwarded-prefix': '/upstream/imagegen-flux-schnell' },
      payload: { prompt: 'x', response_format: 'url' },
    });
    expect(res.statusCode).toBe(200);
    const { data, render_id: id } = res.json();
    // Not believed by default: a page or proxy in between could point a client's links (and its key) elsewhere.
    expect(data[0].url).toBe(`http://127.0.0.1:7860/renders/${id}/outputs/0`);
    expect(data[0]).not.toHaveProperty('b64_json');
    const trusting = await startTestFront({ TRUST_FORWARDED_HEADERS: '1' });
    await succeed(trusting);
    try {
      const r = await trusting.app.inject({
        method: 'POST',
        url: '/v1/images/generations',
        headers: { host: '127.0.0.1:7860', 'x-forwarded-proto': 'https', 'x-forwarded-prefix': '/upstream/imagegen-flux-schnell' },
        payload: { prompt: 'x', response_format: 'url' },
      });
      expect(r.json().data[0].url).toBe(`https://127.0.0.1:7860/upstream/imagegen-flux-schnell/renders/${r.json().render_id}/outputs/0`);
    } finally {
      await trusting.close();
    }
    const configured = await startTestFront({ PUBLIC_URL: 'http://box:8080/upstream/imagegen-flux-schnell/' });
    await succeed(configured);
    try {
      const r = await configured.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: 'x', response_format: 'url' } });
      expect(r.json().data[0].url).toBe(`http://box:8080/upstream/imagegen-flux-schnell/renders/${r.json().render_id}/outputs/0`);
    } finally {
      await configured.close();
    }
  });

  it('refuses bad input with a 400 naming the OpenAI field, before anything starts', async () => {
    const before = front.starts.length;
    const post = (payload: unknown) => front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: payload as object });
    expectOpenAiError(await post({ model: 'imagegen-flux-schnell' }), 400, 'prompt', 'invalid_request_error', /^prompt: required/);
    expectOpenAiError(await post({ prompt: '   ' }), 400, 'prompt', 'invalid_request_error', /prompt: required/);
    expectOpenAiError(await post({ prompt: 'x', size: 'huge' }), 400, 'size', 'invalid_request_error', /not WIDTHxHEIGHT/);
    expectOpenAiError(await post({ prompt: 'x', n: 99 }), 400, 'n', 'invalid_request_error', /n: must be 1\.\.16/);
    expectOpenAiError(await post({ prompt: 'x', n: 'two' }), 400, 'n', 'invalid_request_error', /expected an integer/);
    expectOpenAiError(await post({ prompt: 'x', response_format: 'jpeg' }), 400, 'response_format', 'invalid_request_error');
    expectOpenAiError(
      await post({ prompt: 'x', model: 'no-such-model' }),
      400,
      'model',
      'invalid_request_error',
      new RegExp(`unknown model "no-such-model"; image models: ${knownModelNames('image').join(', ')}`),
    );
    expectOpenAiError(await post({ prompt: 'x', model: 'videogen-wan22-5b' }), 400, 'model', 'invalid_request_error', /video model/);
    expectOpenAiError(await post({ prompt: 'x', stream: true }), 400, 'stream', 'invalid_request_error');
    expectOpenAiError(await post({ prompt: 'x', sampler: 'nope' }), 400, 'sampler', 'invalid_request_error', /^sampler: "nope"/);
    expectOpenAiError(await post({ prompt: 'x', seed: -5 }), 400, 'seed', 'invalid_request_error');
    expectOpenAiError(await post([1, 2]), 400, 'body', 'invalid_request_error');
    const bad = await front.app.inject({
      method: 'POST',
      url: '/v1/images/generations',
      payload: '{"prompt":',
      headers: { 'content-type': 'application/json' },
    });
    expectOpenAiError(bad, 400, 'body', 'invalid_request_error', /not valid JSON/);
    expect(front.starts.length).toBe(before);
    // Over the pixel budget is fitted, not refused (keeping the aspect), with a warning naming the OpenAI field.
    const fitted = await post({ prompt: 'x', size: '4096x4096' });
    expect(fitted.statusCode, fitted.body).not.toBe(400);
    expect(front.starts.at(-1)!.request.width).toBeLessThan(4096);
  });
});

describe('refusals the resolver and the submitter make name the OpenAI field', () => {
  it("the submitter's 413 for a render too large for history names n, never batch_size or n_iter", async () => {
    const wide = await startTestFront({ MAX_BATCH: '40' });
    try {
      // 40 graphs each carrying a 16 Ki-character prompt of 3-byte characters: over the workflow input limit, one fits.
      const res = await wide.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: '中'.repeat(16 * 1024), n: 40 } });
      expectOpenAiError(res, 413, 'n', 'invalid_request_error', /^n: the render is too large to run durably: 40 image/);
      expect(res.body).not.toMatch(/batch_size|n_iter/);
      expect(wide.starts).toHaveLength(0);
    } finally {
      await wide.close();
    }
  });

  it('a body key that names an Object.prototype member (toString, constructor, hasOwnProperty) is an unknown field, not a 500', async () => {
    await succeed(front);
    for (const key of ['toString', 'constructor', 'hasOwnProperty', 'valueOf']) {
      const res = await front.app.inject({
        method: 'POST',
        url: '/v1/images/generations',
        headers: { 'content-type': 'application/json' },
        payload: `{"prompt":"x","size":"64x64","${key}":1}`,
      });
      expect(res.statusCode, `${key}: ${res.body}`).toBe(200);
      expect(res.json().warnings).toContain(`${key}: unknown field; ignored`);
    }
    // The JSON parser refuses a `__proto__` key itself: a 400 in OpenAI's envelope.
    const proto = await front.app.inject({
      method: 'POST',
      url: '/v1/images/generations',
      headers: { 'content-type': 'application/json' },
      payload: '{"prompt":"x","__proto__":1}',
    });
    expectOpenAiError(proto, 400, 'body', 'invalid_request_error');
  });

  it("the resolver's own checks name the OpenAI field at their source: size for the grid, strength for img2img", async () => {
    await succeed(front);
    const snapped = await front.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: 'x', size: '1000x1000' } });
    expect(snapped.statusCode, snapped.body).toBe(200);
    expect(front.starts.at(-1)!.request.width % 16).toBe(0);
    const edit = multipart([
      { name: 'prompt', value: 'x' },
      { name: 'model', value: 'imagegen-flux-dev' },
      { name: 'strength', value: '1.5' },
      { name: 'image', value: redSquare(64), filename: 'a.png' },
    ]);
    const res = await front.app.inject({ method: 'POST', url: '/v1/images/edits', ...edit });
    expectOpenAiError(res, 400, 'strength', 'invalid_request_error', /^strength: 1\.5 is out of range 0\.\.1/);
  });
});

describe('what happened to the images, in the answer', () => {
  /** The render's first output came back black (NaNs in the VAE), its second stopped by an interrupt at step 3/8. */
  async function blackThenPartial(f: TestFront): Promise<void> {
    const blobs = new FsBlobStore(f.blobDir);
    f.outcome = async (started) => {
      const request = expectImageRender(f.starts.at(-1)!.request);
      const black = await blobs.put(
        makePng(request.width, request.height, () => [0, 0, 0, 255]),
        { mime: 'image/png' },
      );
      const partial = await blobs.put(
        makePng(request.width, request.height, () => [9, 90, 9, 255]),
        { mime: 'image/png' },
      );
      const outputs = [{ ...black, blank: 'black' as const }, partial];
      return {
        renderId: started.renderId,
        outputs,
        seeds: [request.seed, request.seed + 1],
        request,
        backend: 'comfyui-0',
        promptIds: [],
        timings: [],
        interrupted: true,
        partial: [{ item: 1, step: 3, steps: 8 }],
      } satisfies RenderResult;
    };
  }

  it('/v1/images/edits and /v1/images/generations warn about a black image and a partial one, as the A1111 routes do', async () => {
    const f = await startTestFront({ MAX_IMAGE_BYTES: String(256 * 1024) });
    try {
      await blackThenPartial(f);
      const { payload, headers } = multipart([
        { name: 'model', value: 'imagegen-flux-dev' },
        { name: 'prompt', value: 'a red ball' },
        { name: 'image', value: redSquare(64), filename: 'a.png' },
        { name: 'n', value: '2' },
      ]);
      const edit = await f.app.inject({ method: 'POST', url: '/v1/images/edits', payload, headers });
      expect(edit.statusCode, edit.body).toBe(200);
      expect(edit.json().data).toHaveLength(2);
      const warnings: string[] = edit.json().warnings;
      expect(warnings).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^image 0 is uniformly black: the VAE most likely produced NaNs/),
          expect.stringMatching(/^image 1 is partial: interrupted after 3\/8 sampling steps/),
        ]),
      );
      const gen = await f.app.inject({
        method: 'POST',
        url: '/v1/images/generations',
        payload: { model: 'imagegen-flux-dev', prompt: 'x', n: 2, size: '64x64' },
      });
      expect(gen.statusCode, gen.body).toBe(200);
      expect(gen.json().warnings).toEqual(expect.arrayContaining([expect.stringMatching(/^image 0 is uniformly black/)]));
      // The same words as the A1111 route's info.warnings.
      const a1111 = await f.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', payload: { prompt: 'x', width: 64, height: 64, batch_size: 2 } });
      expect(JSON.parse(a1111.json().info).warnings).toEqual(gen.json().warnings);
    } finally {
      await f.close();
    }
  });
});

describe('POST /v1/images/edits', () => {
  const transparentDisc = makePng(64, 64, (x, y) => ((x - 32) ** 2 + (y - 32) ** 2 < 256 ? [0, 0, 0, 0] : [0, 0, 0, 255]));

  it('gives an instruction-edit model every image as a reference, sized like the first image', async () => {
    const { payload, headers } = multipart([
      { name: 'model', value: 'imagegen-flux-kontext' },
      { name: 'prompt', value: 'make it blue' },
      { name: 'image[]', value: makePng(96, 64, () => [200, 0, 0, 255]), filename: 'a.png' },
      { name: 'image[]', value: redSquare(32), filename: 'b.png' },
      { name: 'seed', value: '7' },
      { name: 'mask', value: transparentDisc, filename: 'm.png' },
    ]);
    const res = await front.app.inject({ method: 'POST', url: '/v1/images/edits', payload, headers });
    expect(res.statusCode, res.body).toBe(200);
    const request = expectImageRender(front.starts.at(-1)!.request);
    expect(request).toMatchObject({ kind: 'edit', model: 'imagegen-flux-kontext', seed: 7, width: 96, height: 64 });
    expect(request.extraImages).toHaveLength(2);
    expect(res.json().data[0].seed).toBe(7);
    expect(res.json().warnings.join('\n')).toMatch(/mask: not applied; imagegen-flux-kontext edits what the prompt says/);
  });

  it("inpaints on an img2img model where OpenAI's mask is transparent (white = repaint for the graph), redrawing it whole", async () => {
    const { payload, headers } = multipart([
      { name: 'model', value: 'imagegen-flux-dev' },
      { name: 'prompt', value: 'a red ball' },
      { name: 'image', value: redSquare(64), filename: 'a.png' },
      { name: 'mask', value: transparentDisc, filename: 'm.png' },
      { name: 'size', value: '64x64' },
    ]);
    const res = await front.app.inject({ method: 'POST', url: '/v1/images/edits', payload, headers });
    expect(res.statusCode, res.body).toBe(200);
    const request = expectImageRender(front.starts.at(-1)!.request);
    expect(request).toMatchObject({ kind: 'img2img', denoise: 1, width: 64, height: 64 });
    const mask = PNG.sync.read(await new FsBlobStore(front.blobDir).get(request.mask!.sha256));
    const at = (x: number, y: number): number => mask.data[(y * mask.width + x) * 4]!;
    expect(at(32, 32)).toBe(255); // transparent in the OpenAI mask: repaint
    expect(at(2, 2)).toBe(0); // opaque: keep
  });

  it('a mask without transparency is read as white = edit (sd-server clients send those), with a warning', async () => {
    const whiteDisc = makePng(64, 64, (x, y) => ((x - 32) ** 2 + (y - 32) ** 2 < 256 ? [255, 255, 255, 255] : [0, 0, 0, 255]));
    const tag = '<sd_cpp_extra_args>{"width":128,"height":96,"strength":0.4}</sd_cpp_extra_args>';
    const { payload, headers } = multipart([
      { name: 'model', value: 'imagegen-flux-dev' },
      { name: 'prompt', value: `a red ball ${tag}` },
      { name: 'image', value: redSquare(64), filename: 'a.png' },
      { name: 'mask', value: whiteDisc, filename: 'm.png' },
    ]);
    const res = await front.app.inject({ method: 'POST', url: '/v1/images/edits', payload, headers });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().warnings.join('\n')).toMatch(/mask: has no transparent pixels/);
    const request = expectImageRender(front.starts.at(-1)!.request);
    expect(request).toMatchObject({ kind: 'img2img', denoise: 0.4, width: 128, height: 96, prompt: 'a red ball' });
    const mask = PNG.sync.read(await new FsBlobStore(front.blobDir).get(request.mask!.sha256));
    expect(mask.data[(32 * mask.width + 32) * 4]).toBe(255);
    expect(mask.data[(2 * mask.width + 2) * 4]).toBe(0);
  });

  it('img2img without a mask keeps the layout (strength 0.75 unless sent); JSON bodies with data URLs work too', async () => {
    const dataUrl = `data:image/png;base64,${redSquare(64).toString('base64')}`;
    const res = await front.app.inject({
      method: 'POST',
      url: '/v1/images/edits',
      payload: { model: 'imagegen-qwen-image', prompt: 'x', image: dataUrl, strength: '0.5' },
    });
    expect(res.statusCode, res.body).toBe(200);
    // size auto: the image's own size, as for an uploaded file.
    expect(front.starts.at(-1)!.request).toMatchObject({ kind: 'img2img', denoise: 0.5, model: 'imagegen-qwen-image', width: 64, height: 64 });
    const asText = multipart([
      { name: 'prompt', value: 'x' },
      { name: 'model', value: 'imagegen-flux-kontext' },
      { name: 'image', value: dataUrl },
    ]);
    expect((await front.app.inject({ method: 'POST', url: '/v1/images/edits', ...asText })).statusCode).toBe(200);
    expect(front.starts.at(-1)!.request).toMatchObject({ kind: 'edit', width: 64, height: 64 });
    const plain = multipart([
      { name: 'prompt', value: 'x' },
      { name: 'model', value: 'imagegen-flux-dev' },
      { name: 'image', value: redSquare(64), filename: 'a.png' },
    ]);
    await front.app.inject({ method: 'POST', url: '/v1/images/edits', ...plain });
    expect(front.starts.at(-1)!.request).toMatchObject({ kind: 'img2img', denoise: 0.75 });
  });

  it('an Idempotency-Key retry is recognised by the fields and the images content, not the multipart bytes', async () => {
    const parts = (seed: string) => [
      { name: 'prompt', value: 'x' },
      { name: 'seed', value: seed },
      { name: 'image', value: redSquare(64), filename: 'a.png' },
    ];
    const first = multipart(parts('1'));
    await front.app.inject({ method: 'POST', url: '/v1/images/edits', payload: first.payload, headers: { ...first.headers, 'idempotency-key': 'k1' } });
    const a = front.starts.at(-1)!.opts;
    const again = multipart(parts('1')); // another boundary, same content
    await front.app.inject({ method: 'POST', url: '/v1/images/edits', payload: again.payload, headers: { ...again.headers, 'idempotency-key': 'k1' } });
    const b = front.starts.at(-1)!.opts;
    expect(a.renderId).toBe(renderIdForKey('k1'));
    expect(a.fingerprint).toBeDefined();
    expect(b.fingerprint).toEqual(a.fingerprint);
    const other = multipart(parts('2'));
    await front.app.inject({ method: 'POST', url: '/v1/images/edits', payload: other.payload, headers: { ...other.headers, 'idempotency-key': 'k1' } });
    // Same key, other content: a conflict, nothing started.
    expect(front.starts.at(-1)!.opts).toBe(b);
  });

  it('refuses malformed, oversized and unexpected parts with a clean 4xx naming the part', async () => {
    const before = front.starts.length;
    const send = (parts: Parameters<typeof multipart>[0]) => front.app.inject({ method: 'POST', url: '/v1/images/edits', ...multipart(parts) });
    expectOpenAiError(await send([{ name: 'prompt', value: 'x' }]), 400, 'image', 'invalid_request_error', /image: required/);
    expectOpenAiError(
      await send([
        { name: 'prompt', value: 'x' },
        { name: 'image', value: Buffer.alloc(300 * 1024, 1), filename: 'big.png' },
      ]),
      413,
      'image[0]',
      'invalid_request_error',
      /exceeds the limit of 262144 bytes/,
    );
    const four = [0, 1, 2, 3].map(() => ({ name: 'image[]', value: redSquare(16), filename: 'x.png' }));
    expectOpenAiError(await send([{ name: 'prompt', value: 'x' }, ...four]), 400, 'image', 'invalid_request_error', /more than 3 images/);
    expectOpenAiError(
      await send([
        { name: 'prompt', value: 'x' },
        { name: 'photo', value: redSquare(16), filename: 'x.png' },
      ]),
      400,
      'photo',
      'invalid_request_error',
      /unexpected file/,
    );
    expectOpenAiError(
      await send([
        { name: 'prompt', value: 'x' },
        { name: 'model', value: 'imagegen-flux-dev' },
        { name: 'image[]', value: redSquare(16), filename: 'a.png' },
        { name: 'image[]', value: redSquare(16), filename: 'b.png' },
      ]),
      400,
      'image',
      'invalid_request_error',
      /edits one image.*imagegen-flux-kontext/,
    );
    expectOpenAiError(
      await send([
        { name: 'prompt', value: 'x' },
        { name: 'image', value: Buffer.from('not an image'), filename: 'a.png' },
      ]),
      400,
      'image[0]',
      'invalid_request_error',
      /not a PNG, JPEG or WebP/,
    );
    expectOpenAiError(
      await send([
        { name: 'prompt', value: 'x' },
        { name: 'model', value: 'imagegen-flux-dev' },
        { name: 'image', value: redSquare(16), filename: 'a.png' },
        { name: 'mask', value: Buffer.from([0xff, 0xd8, 0xff, 0]), filename: 'm.jpg' },
      ]),
      400,
      'mask',
      'invalid_request_error',
      /must be a PNG/,
    );
    const truncated = multipart([
      { name: 'prompt', value: 'x' },
      { name: 'image', value: redSquare(16), filename: 'a.png' },
    ]);
    const cut = await front.app.inject({
      method: 'POST',
      url: '/v1/images/edits',
      headers: truncated.headers,
      payload: truncated.payload.subarray(0, truncated.payload.length - 60),
    });
    expect(cut.statusCode).toBeGreaterThanOrEqual(400);
    expect(cut.statusCode).toBeLessThan(500);
    expect(cut.json().error.message).toMatch(/body|image/);
    const noBoundary = await front.app.inject({ method: 'POST', url: '/v1/images/edits', headers: { 'content-type': 'multipart/form-data' }, payload: 'junk' });
    expect(noBoundary.statusCode).toBe(400);
    expect(noBoundary.json().error.type).toBe('invalid_request_error');
    expect(front.starts.length).toBe(before);
  });
});

describe("OpenAI's error envelope on every /v1/* error", () => {
  it('unknown /v1 routes, and video errors keep their envelope', async () => {
    expectOpenAiError(
      await front.app.inject({ method: 'POST', url: '/v1/images/variations', payload: {} }),
      404,
      null,
      'not_found_error',
      /no route POST \/v1\/images\/variations/,
    );
    const video = await front.app.inject({ method: 'POST', url: '/v1/videos', payload: { prompt: 'x', size: 'huge' } });
    expect(video.statusCode).toBe(400);
    expect(video.json().error).toMatchObject({ param: 'size', type: 'invalid_request_error' });
    // Outside /v1 nothing changes: A1111's envelope.
    const a1111 = await front.app.inject({ method: 'POST', url: '/sdapi/v1/txt2img', payload: { prompt: 'x', n_iter: 99 } });
    expect(a1111.json()).toMatchObject({ error: 'HTTPException', field: 'batch_size' });
  });

  it("the front's guards: 401 token, 403 host, 413 body, 503 admission", async () => {
    const guarded = await startTestFront({ API_TOKEN: 'tok', BODY_LIMIT_BYTES: '2048' }, { waitingRenders: async () => 10_000 });
    try {
      const unauth = await guarded.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: 'x' } });
      expectOpenAiError(unauth, 401, 'authorization', 'authentication_error', /missing or invalid API token/);
      expect(unauth.json().error.code).toBe('invalid_api_key');
      expectOpenAiError(await guarded.app.inject({ method: 'GET', url: '/v1/models' }), 401, 'authorization', 'authentication_error');
      const auth = { authorization: 'Bearer tok' };
      expectOpenAiError(
        await guarded.app.inject({ method: 'GET', url: '/v1/models', headers: { ...auth, host: 'evil.example' } }),
        403,
        'host',
        'permission_error',
        /not served here/,
      );
      const big = await guarded.app.inject({ method: 'POST', url: '/v1/images/generations', headers: auth, payload: { prompt: 'x'.repeat(4000) } });
      expectOpenAiError(big, 413, 'body', 'invalid_request_error', /larger than 2048 bytes/);
      const full = await guarded.app.inject({ method: 'POST', url: '/v1/images/generations', headers: auth, payload: { prompt: 'x' } });
      expectOpenAiError(full, 503, null, 'server_error', /MAX_WAITING_RENDERS/);
      expect(full.headers['retry-after']).toBeDefined();
      expectOpenAiError(
        await guarded.app.inject({ method: 'GET', url: '/v1/videos/render-x', headers: { host: 'evil.example' } }),
        403,
        'host',
        'permission_error',
      );
    } finally {
      await guarded.close();
    }
  });

  it('a failed render: its status, message and render id', async () => {
    const failing = await startTestFront();
    try {
      const res = await failing.app.inject({ method: 'POST', url: '/v1/images/generations', payload: { prompt: 'x' } });
      expectOpenAiError(res, 503, null, 'server_error', /no GPU in this test/);
      expect(res.json().render_id).toMatch(/^render-[0-9a-z]+$/);
    } finally {
      await failing.close();
    }
  });
});

describe('toOpenAiEnvelope', () => {
  it("turns A1111's and FastAPI's envelopes into OpenAI's, whatever the guard (415, 429 included), and leaves OpenAI's alone", () => {
    const a1111 = { error: 'HTTPException', detail: 'unsupported content type text/xml', body: '', errors: '', field: 'content-type' };
    expect(toOpenAiEnvelope(415, a1111, 'POST', '/v1/images/generations')).toEqual({
      error: { message: 'unsupported content type text/xml', type: 'invalid_request_error', param: 'content-type', code: 'unsupported_media_type' },
      detail: 'unsupported content type text/xml',
    });
    expect(toOpenAiEnvelope(429, { detail: 'slow down' }, 'GET', '/v1/models')?.error).toEqual({
      message: 'slow down',
      type: 'rate_limit_error',
      param: null,
      code: 'rate_limit_exceeded',
    });
    expect(toOpenAiEnvelope(500, { detail: '' }, 'GET', '/v1/models')?.error).toMatchObject({ message: 'HTTP 500', type: 'server_error' });
    expect(toOpenAiEnvelope(400, { error: { message: 'x', type: 't', param: null, code: 400 }, detail: 'x' }, 'POST', '/v1/videos')).toBeUndefined();
  });
});

describe('imagesResponse', () => {
  it('reports revised_prompt only when the prompt rendered differs from the one sent', () => {
    const result = {
      renderId: 'r',
      outputs: [{ sha256: 'a', size: 1, mime: 'image/jpeg' }],
      seeds: [5],
      request: { kind: 'txt2img', prompt: 'a cat', seed: 5, width: 64, height: 64 },
    } as unknown as RenderResult;
    const same = imagesResponse({ result, renderId: 'r', sentPrompt: 'a cat', images: { b64: ['QQ=='] }, warnings: [] });
    expect(same.data[0]).toEqual({ b64_json: 'QQ==', seed: 5 });
    expect(same).not.toHaveProperty('warnings');
    expect(same.output_format).toBe('jpeg');
    const changed = imagesResponse({ result, renderId: 'r', sentPrompt: 'a cat <lora:x:1>', images: { baseUrl: 'http://h' }, warnings: ['w'] });
    expect(changed.data[0]).toEqual({ url: 'http://h/renders/r/outputs/0', revised_prompt: 'a cat', seed: 5 });
  });
});
