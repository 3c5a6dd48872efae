/**
 * The exact call sequences of two common A1111 clients, replayed over HTTP against the real stack (real
 * Temporal dev server + fake ComfyUI + the service as a child process), with and without Basic auth:
 * - SillyTavern's server proxy (`src/endpoints/stable-diffusion.js`): ping = GET options; upscalers +
 *   latent-upscale-modes; sd-vae and sd-modules; samplers; schedulers; sd-models (titles); get-model; set-model =
 *   POST options {sd_model_checkpoint} then poll progress until `progress === 0 && job_count === 0`; generate =
 *   GET options, POST txt2img with its whole body (including `url` and `auth`), and on client disconnect
 *   `POST /sdapi/v1/interrupt` with only an Authorization header. Auth is `Basic base64(auth)`, `Basic ` when empty.
 * - Open WebUI (`backend/open_webui/routers/images.py`): verify = GET options; models = GET sd-models
 *   (`title` → id); set model = GET options, then POST the whole dict back with `sd_model_checkpoint` replaced;
 *   current model = options.sd_model_checkpoint; generate = POST txt2img {prompt, batch_size: n, width, height,
 *   steps, negative_prompt} merged with AUTOMATIC1111_PARAMS; reads `images` (PNG assumed) and `info`. Auth is
 *   `authorization: Basic base64(api_auth)`, or an empty header when unset.
 * Plus the proxy and browser settings: ALLOWED_HOSTS, CORS_ALLOW_ORIGINS, 401 with a Basic challenge.
 */
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { pngSize } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

const TOKEN = 'correct-horse-battery';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let open: TestService;
let guarded: TestService;

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
  [open, guarded] = await Promise.all([
    startService({ temporalAddress: temporal.address, comfyUrl: fake.url }),
    startService({
      temporalAddress: temporal.address,
      comfyUrl: fake.url,
      env: { API_TOKEN: TOKEN, ALLOWED_HOSTS: 'sd-proxy.lan', CORS_ALLOW_ORIGINS: 'https://ui.example' },
    }),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all([open?.kill('SIGKILL'), guarded?.kill('SIGKILL')]);
  await fake?.close();
  await temporal?.stop();
});

const basic = (credentials: string): string => `Basic ${Buffer.from(credentials).toString('base64')}`;

interface Call {
  status: number;
  ok: boolean;
  json: any;
}

async function call(base: string, method: string, route: string, headers: Record<string, string>, body?: unknown, signal?: AbortSignal): Promise<Call> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    ...(signal ? { signal } : {}),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // left as text
  }
  return { status: res.status, ok: res.ok, json };
}

/** Resolves once the fake is running a prompt inside a hanging node. */
async function hanging(): Promise<void> {
  for (;;) {
    const s = fake.state.statsSnapshot();
    if (s.queue.running.length > 0 && s.faults.hang === null) return;
    await new Promise((r) => setImmediate(r));
  }
}

/** SillyTavern's SD extension, through its server proxy, with the `auth` setting as given. */
async function sillyTavern(base: string, auth: string): Promise<void> {
  const h = { Authorization: basic(auth) };
  const json = { 'Content-Type': 'application/json', ...h };
  // ping
  expect((await call(base, 'GET', '/sdapi/v1/options', h)).ok).toBe(true);
  // upscalers: names of both lists, "None" first
  const upscalers = (await call(base, 'GET', '/sdapi/v1/upscalers', h)).json.map((x: { name: string }) => x.name);
  const latent = (await call(base, 'GET', '/sdapi/v1/latent-upscale-modes', h)).json.map((x: { name: string }) => x.name);
  expect(upscalers[0]).toBe('None');
  expect(latent).toContain('Latent');
  // vaes: A1111's and Forge's route, whichever answers a list
  const vaes = await Promise.all([call(base, 'GET', '/sdapi/v1/sd-vae', h), call(base, 'GET', '/sdapi/v1/sd-modules', h)]);
  expect(vaes.some((v) => v.ok && Array.isArray(v.json))).toBe(true);
  const samplers = (await call(base, 'GET', '/sdapi/v1/samplers', h)).json.map((x: { name: string }) => x.name);
  const schedulers = (await call(base, 'GET', '/sdapi/v1/schedulers', h)).json.map((x: { name: string }) => x.name);
  expect(samplers).toContain('DPM++ 2M');
  expect(schedulers).toContain('karras');
  const models = (await call(base, 'GET', '/sdapi/v1/sd-models', h)).json.map((x: { title: string }) => x.title);
  const schnell = models.find((t: string) => /schnell/i.test(t));
  expect(schnell).toBeDefined();
  // set-model, then wait for "idle" the way SillyTavern does (strict numeric zeros)
  expect((await call(base, 'POST', '/sdapi/v1/options', json, { sd_model_checkpoint: schnell })).ok).toBe(true);
  const progress = (await call(base, 'GET', '/sdapi/v1/progress', h)).json;
  expect(progress.progress === 0.0 && progress.state.job_count === 0).toBe(true);
  // get-model
  expect((await call(base, 'GET', '/sdapi/v1/options', h)).json.sd_model_checkpoint).toBe(schnell);

  const generateBody = {
    url: base,
    auth,
    prompt: 'a lighthouse at dusk, detailed',
    negative_prompt: 'blurry',
    sampler_name: 'DPM++ 2M',
    scheduler: 'karras',
    steps: 6,
    cfg_scale: 7,
    width: 960,
    height: 540,
    restore_faces: false,
    enable_hr: false,
    hr_upscaler: 'Latent',
    hr_scale: 2,
    denoising_strength: 0.7,
    hr_second_pass_steps: 0,
    override_settings: { CLIP_stop_at_last_layers: 1 },
    override_settings_restore_afterwards: true,
    clip_skip: 1,
    save_images: true,
    send_images: true,
    do_not_save_grid: false,
    do_not_save_samples: false,
  };
  // generate: GET options first (Forge detection), then the whole body
  expect('forge_preset' in (await call(base, 'GET', '/sdapi/v1/options', h)).json).toBe(false);
  const gen = await call(base, 'POST', '/sdapi/v1/txt2img', json, generateBody);
  expect(gen.status, JSON.stringify(gen.json).slice(0, 400)).toBe(200);
  expect(pngSize(gen.json.images[0])).toMatchObject({ width: 960, height: 544 });
  expect(JSON.parse(gen.json.info).sd_model_name).toBe('imagegen-flux-schnell');
  // A user with Align Your Steps saved and the hires fix on at SillyTavern's default ×2 of 1024²: before, a
  // 400 for the scheduler and another for the size, both shown as "Internal Server Error".
  const ays = await call(base, 'POST', '/sdapi/v1/txt2img', json, {
    ...generateBody,
    scheduler: 'Align Your Steps',
    sampler_name: 'Euler',
    width: 1024,
    height: 1024,
    steps: 3,
    enable_hr: true,
    hr_second_pass_steps: 1,
  });
  expect(ays.status, JSON.stringify(ays.json).slice(0, 400)).toBe(200);
  expect(pngSize(ays.json.images[0])).toMatchObject({ width: 1536, height: 1536 });
  const aysInfo = JSON.parse(ays.json.info);
  expect(aysInfo.extra_generation_params['Schedule type']).toBe('Align Your Steps');
  expect(aysInfo.warnings.join('\n')).toMatch(/scaled down to 1536x1536/);

  // The user closes the chat while it renders: the proxy aborts and sends a bare interrupt.
  fake.state.faults.apply({ hang: { count: 1, nodeClass: 'KSampler' } });
  const ac = new AbortController();
  const abandoned = call(base, 'POST', '/sdapi/v1/txt2img', json, { ...generateBody, seed: 3 }, ac.signal).catch((e: unknown) => e);
  await hanging();
  ac.abort();
  await abandoned;
  const interrupt = await call(base, 'POST', '/sdapi/v1/interrupt', h);
  expect(interrupt.status).toBe(200);
  // The GPU is free again: the next render runs (it would wait behind a hung prompt otherwise).
  const next = await call(base, 'POST', '/sdapi/v1/txt2img', json, { ...generateBody, width: 512, height: 512, steps: 1 });
  expect(next.status).toBe(200);
  expect(next.json.images).toHaveLength(1);
}

/** Open WebUI's A1111 engine, with AUTOMATIC1111_API_AUTH as given (undefined = unset). */
async function openWebUI(base: string, apiAuth: string | undefined): Promise<void> {
  const h = { authorization: apiAuth === undefined ? '' : basic(apiAuth) };
  const json = { 'Content-Type': 'application/json', ...h };
  // verify
  expect((await call(base, 'GET', '/sdapi/v1/options', h)).ok).toBe(true);
  // models
  const models = (await call(base, 'GET', '/sdapi/v1/sd-models', h)).json.map((m: { title: string; model_name: string }) => ({
    id: m.title,
    name: m.model_name,
  }));
  const qwen = models.find((m: { name: string }) => m.name === 'imagegen-qwen-image');
  expect(qwen).toBeDefined();
  // set model: the whole options dict goes back with one key changed
  const options = (await call(base, 'GET', '/sdapi/v1/options', h)).json;
  if (options.sd_model_checkpoint !== qwen.id) {
    options.sd_model_checkpoint = qwen.id;
    const set = await call(base, 'POST', '/sdapi/v1/options', json, options);
    expect(set.status).toBe(200);
  }
  // current model
  expect((await call(base, 'GET', '/sdapi/v1/options', h)).json.sd_model_checkpoint).toBe(qwen.id);
  // generate n=10, with the admin's AUTOMATIC1111_PARAMS merged over the payload
  const data = {
    prompt: 'a red fox in snow',
    batch_size: 10,
    width: 256,
    height: 256,
    steps: 2,
    negative_prompt: 'text',
    cfg_scale: 7,
    sampler_name: 'Euler a',
    scheduler: 'normal',
  };
  const res = await call(base, 'POST', '/sdapi/v1/txt2img', json, data);
  expect(res.status, JSON.stringify(res.json).slice(0, 400)).toBe(200);
  expect(res.json.images).toHaveLength(10);
  for (const image of res.json.images as string[]) {
    // No comma: Open WebUI assumes image/png and base64-decodes it.
    expect(image.includes(',')).toBe(false);
    expect(Buffer.from(image, 'base64').subarray(1, 4).toString('latin1')).toBe('PNG');
  }
  const info = JSON.parse(res.json.info);
  expect(info).toMatchObject({ sd_model_name: 'imagegen-qwen-image', batch_size: 10, cfg_scale: 7 });
  expect(info.all_seeds).toHaveLength(10);
}

describe('SillyTavern call sequence', () => {
  it('without auth (its empty auth setting sends "Basic ")', async () => {
    await sillyTavern(open.url, '');
  });
  it('with Basic auth (user:token)', async () => {
    await sillyTavern(guarded.url, `st:${TOKEN}`);
  });
});

describe('Open WebUI call sequence', () => {
  it('without auth (an empty authorization header)', async () => {
    await openWebUI(open.url, undefined);
  });
  it('with Basic auth (AUTOMATIC1111_API_AUTH user:token)', async () => {
    await openWebUI(guarded.url, `owui:${TOKEN}`);
  });
});

describe('behind a proxy, and browsers', () => {
  const rawStatus = (
    base: string,
    method: string,
    route: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> =>
    new Promise((resolve, reject) => {
      const req = http.request(`${base}${route}`, { method, headers }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });

  it('a wrong or missing credential is a 401 with a Basic challenge, in the A1111 envelope', async () => {
    const r = await rawStatus(guarded.url, 'GET', '/sdapi/v1/options', {});
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toMatch(/^Basic /);
    expect(JSON.parse(r.body)).toMatchObject({ error: 'HTTPException', field: 'authorization' });
    expect((await rawStatus(guarded.url, 'GET', '/sdapi/v1/options', { authorization: basic('x:wrong') })).status).toBe(401);
    // A browser's fetch (the gallery) gets no challenge: it would pop a password dialog over the token form.
    const browser = await rawStatus(guarded.url, 'GET', '/renders', { 'sec-fetch-mode': 'cors' });
    expect(browser.status).toBe(401);
    expect(browser.headers['www-authenticate']).toBeUndefined();
  });

  it('ALLOWED_HOSTS names are served on a loopback front; other names are not', async () => {
    const auth = { authorization: basic(`p:${TOKEN}`) };
    expect((await rawStatus(guarded.url, 'GET', '/sdapi/v1/options', { ...auth, host: 'sd-proxy.lan:7860' })).status).toBe(200);
    expect((await rawStatus(guarded.url, 'GET', '/sdapi/v1/options', { ...auth, host: 'evil.example' })).status).toBe(403);
  });

  it('CORS_ALLOW_ORIGINS: listed origins get preflights and may POST; others stay refused', async () => {
    const pre = await rawStatus(guarded.url, 'OPTIONS', '/sdapi/v1/interrupt', {
      origin: 'https://ui.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    });
    expect(pre.status).toBe(200);
    expect(pre.headers['access-control-allow-origin']).toBe('https://ui.example');
    expect(pre.headers['access-control-allow-headers']).toBe('authorization, content-type');
    const auth = { authorization: basic(`p:${TOKEN}`) };
    const ok = await rawStatus(guarded.url, 'POST', '/sdapi/v1/interrupt', { ...auth, origin: 'https://ui.example' });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe('https://ui.example');
    expect((await rawStatus(guarded.url, 'POST', '/sdapi/v1/interrupt', { ...auth, origin: 'https://evil.example' })).status).toBe(403);
    expect((await rawStatus(open.url, 'POST', '/sdapi/v1/interrupt', { origin: 'https://ui.example' })).status).toBe(403);
  });
});
