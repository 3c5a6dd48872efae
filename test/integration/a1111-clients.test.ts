/**
 * What common A1111 clients send, through the real stack (real Temporal dev server + fake ComfyUI + the
 * service as a child process): any size, edit models from plain img2img / txt2img, interrupt and skip as
 * A1111 does them, lenient bodies, A1111's error envelope.
 */
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { loadObjectInfoFixture } from '../../tools/fake-comfyui/fixture.ts';
import { pngSize, redSquare } from '../support/fixtures.ts';
import { makePngWith } from '../golden/helpers.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;

interface Answer {
  status: number;
  json: any;
  headers: http.IncomingHttpHeaders;
}

/** A raw HTTP request, so tests control the content type and the body bytes exactly. */
function raw(method: string, route: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${svc.url}${route}`, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json: unknown = text;
        try {
          json = JSON.parse(text);
        } catch {
          // not JSON: kept as text
        }
        resolve({ status: res.statusCode ?? 0, json, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const post = (route: string, body: unknown): Promise<Answer> => raw('POST', route, { 'content-type': 'application/json' }, JSON.stringify(body));

async function render(route: 'txt2img' | 'img2img', body: Record<string, unknown>): Promise<{ images: string[]; info: any }> {
  const r = await post(`/sdapi/v1/${route}`, body);
  expect(r.status, JSON.stringify(r.json).slice(0, 600)).toBe(200);
  return { images: r.json.images, info: JSON.parse(r.json.info) };
}

const sizeOf = (b64: string) => {
  const { width, height } = pngSize(b64);
  return { width, height };
};

/** Runs `then` synchronously the moment the fake records its `n`-th finished prompt (no polling race). */
function onFinishedPrompt(n: number, then: () => void): void {
  const history = fake.state.queue.history;
  const set = history.set.bind(history);
  let seen = 0;
  history.set = (k, v) => {
    const r = set(k, v);
    if (++seen === n) {
      history.set = set;
      then();
    }
    return r;
  };
}

/** Resolves once the fake is running a prompt inside a hanging node. */
async function hanging(): Promise<void> {
  for (;;) {
    const s = fake.state.statsSnapshot();
    if (s.queue.running.length > 0 && s.faults.hang === null) return;
    await new Promise((r) => setImmediate(r));
  }
}

beforeAll(async () => {
  temporal = await startTestTemporal();
  // A ComfyUI with LoRA and upscale-model files in its folders (the recorded one had none).
  const objectInfo = loadObjectInfoFixture();
  objectInfo.LoraLoader!.input.required!.lora_name = [['style/Detail-Tweaker.safetensors', 'film.safetensors'], {}];
  objectInfo.UpscaleModelLoader!.input.required!.model_name = ['COMBO', { multiselect: false, options: ['4x-UltraSharp.pth'] }];
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')), objectInfo });
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { DEFAULT_MODEL: 'imagegen-flux-schnell' } });
}, 180_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

describe('sizes', () => {
  it.each([
    [960, 540, 960, 544],
    [540, 960, 544, 960],
    [1366, 768, 1360, 768],
    [500, 500, 496, 496],
  ])('%i×%i renders at the model grid (%i×%i) and says so', async (w, h, ew, eh) => {
    const { images, info } = await render('txt2img', { prompt: 'a size', width: w, height: h, steps: 1 });
    expect(sizeOf(images[0]!)).toEqual({ width: ew, height: eh });
    expect(info).toMatchObject({ width: ew, height: eh });
    expect(info.warnings.join('\n')).toMatch(/snapped/);
  });

  it('a size beyond the pixel budget renders scaled down to fit, keeping the aspect, and says so', async () => {
    const { images, info } = await render('txt2img', { prompt: 'big', width: 2048, height: 2048, steps: 1 });
    expect(sizeOf(images[0]!)).toEqual({ width: 1536, height: 1536 });
    expect(info.warnings.join('\n')).toMatch(/2048x2048 scaled down to 1536x1536/);
  });

  it("hires ×2 of 1024² (SillyTavern's default scale) renders at the fitted size with a warning", async () => {
    const { images, info } = await render('txt2img', {
      prompt: 'hires',
      width: 1024,
      height: 1024,
      steps: 1,
      enable_hr: true,
      hr_scale: 2,
      hr_upscaler: 'Latent',
      hr_second_pass_steps: 1,
    });
    expect(sizeOf(images[0]!)).toEqual({ width: 1536, height: 1536 });
    expect(info.warnings.join('\n')).toMatch(/hr_scale.*2048x2048 scaled down to 1536x1536/);
  });

  it('steps 0 is the model default; a batch of 10 (Open WebUI n=10) renders', async () => {
    const { images, info } = await render('txt2img', { prompt: 'ten', batch_size: 10, steps: 0, width: 64, height: 64 });
    expect(images).toHaveLength(10);
    expect(info.steps).toBe(4);
    expect(info.all_seeds).toHaveLength(10);
  });
});

describe('every sampler and scheduler A1111 offers renders', () => {
  const A1111_SAMPLERS = [
    'DPM++ 2M',
    'DPM++ SDE',
    'DPM++ 2M SDE',
    'DPM++ 2M SDE Heun',
    'DPM++ 2S a',
    'DPM++ 3M SDE',
    'Euler a',
    'Euler',
    'LMS',
    'Heun',
    'DPM2',
    'DPM2 a',
    'DPM fast',
    'DPM adaptive',
    'Restart',
    'DDIM',
    'DDIM CFG++',
    'PLMS',
    'UniPC',
    'LCM',
  ];
  const A1111_SCHEDULERS = [
    'Automatic',
    'Uniform',
    'Karras',
    'Exponential',
    'Polyexponential',
    'SGM Uniform',
    'KL Optimal',
    'Align Your Steps',
    'Simple',
    'Normal',
    'DDIM',
    'Beta',
    'Align Your Steps GITS',
    'Turbo',
  ];

  it('GET /samplers and /schedulers list every one of them', async () => {
    const samplers = (await get('/sdapi/v1/samplers')).json.map((s: { name: string }) => s.name);
    expect(samplers).toEqual(expect.arrayContaining(A1111_SAMPLERS));
    const schedulers = (await get('/sdapi/v1/schedulers')).json.map((s: { label: string }) => s.label);
    expect(schedulers).toEqual(expect.arrayContaining(A1111_SCHEDULERS));
  });

  it('each sampler renders', async () => {
    for (const sampler_name of A1111_SAMPLERS) {
      const { images, info } = await render('txt2img', { prompt: 'a sampler', sampler_name, width: 64, height: 64, steps: 3 });
      expect(images, sampler_name).toHaveLength(1);
      if (['PLMS', 'Restart', 'DDIM CFG++'].includes(sampler_name)) expect(info.warnings.join('\n')).toMatch(/ComfyUI has no/);
    }
  }, 120_000);

  it('each scheduler renders (the sigma-node ones through SamplerCustomAdvanced)', async () => {
    for (const scheduler of A1111_SCHEDULERS) {
      const { images, info } = await render('txt2img', { prompt: 'a schedule', scheduler, width: 64, height: 64, steps: 3 });
      expect(images, scheduler).toHaveLength(1);
      if (scheduler !== 'Automatic') expect(info.extra_generation_params['Schedule type'], scheduler).toBeTruthy();
    }
    const last = fake.state.queue.history;
    expect([...last.values()].some((h: any) => JSON.stringify(h).includes('OptimalStepsScheduler'))).toBe(true);
  }, 120_000);
});

describe('what is not offered says what is missing', () => {
  it('interrogate (webuiapi interrogate()): a 422 naming what is missing', async () => {
    const i = await post('/sdapi/v1/interrogate', { image: redSquare(16).toString('base64'), model: 'clip' });
    expect(i.status).toBe(422);
    expect(JSON.stringify(i.json)).toMatch(/captioning model/);
  });
});

describe('the SD upscale script renders (A1111 test_img2img_sd_upscale_performed)', () => {
  it("A1111's own suite's request: the 64² init image ×2 with Lanczos, one pass, said in warnings and the infotext", async () => {
    const init = `data:image/png;base64,${redSquare(64).toString('base64')}`;
    const { images, info } = await render('img2img', {
      prompt: 'example prompt',
      init_images: [init],
      width: 64,
      height: 64,
      steps: 3,
      denoising_strength: 0.75,
      script_name: 'sd upscale',
      script_args: ['', 8, 'Lanczos', 2.0],
    });
    expect(images).toHaveLength(1);
    expect(sizeOf(images[0]!)).toEqual({ width: 128, height: 128 });
    expect(info.warnings.join('\n')).toMatch(/SD upscale redraws the whole ×2 image in one img2img pass/);
    expect(info.infotexts[0]).toMatch(/SD upscale overlap: 8, SD upscale upscaler: Lanczos/);
  });

  it('an upscale model from ComfyUI by name, as webuiapi posts it', async () => {
    const { images } = await render('img2img', {
      prompt: 'x',
      init_images: [redSquare(48).toString('base64')],
      steps: 1,
      script_name: 'SD upscale',
      script_args: [null, 64, '4x-UltraSharp', 2],
    });
    expect(sizeOf(images[0]!)).toEqual({ width: 96, height: 96 });
    const graphs = [...fake.state.queue.history.values()].map((h) => JSON.stringify(h));
    expect(graphs.some((g) => g.includes('ImageUpscaleWithModel') && g.includes('init_model_upscale'))).toBe(true);
  });

  it('SD upscale with a mask, or on txt2img: 422 naming the field', async () => {
    const withMask = await post('/sdapi/v1/img2img', {
      init_images: [redSquare(16).toString('base64')],
      mask: redSquare(16).toString('base64'),
      script_name: 'SD upscale',
    });
    expect([withMask.status, withMask.json.field]).toEqual([422, 'mask']);
    const t2i = await post('/sdapi/v1/txt2img', { prompt: 'x', script_name: 'SD upscale' });
    expect([t2i.status, t2i.json.field]).toEqual([422, 'script_name']);
  });
});

describe('progress only moves forward', () => {
  it('polled through a txt2img of two images, the fraction never decreases and textinfo names the stage', async () => {
    fake.state.faults.apply({ slow: { stepMs: 400 } });
    try {
      const waiting = post('/sdapi/v1/txt2img', { prompt: 'watch me', n_iter: 2, width: 64, height: 64, steps: 8 });
      let done = false;
      void waiting.then(() => (done = true));
      const seen: Array<{ progress: number; textinfo: string | null }> = [];
      while (!done) {
        const p = (await get('/sdapi/v1/progress?skip_current_image=true')).json;
        if (p.state.job_count > 0) seen.push({ progress: p.progress, textinfo: p.textinfo });
        await new Promise((r) => setTimeout(r, 30));
      }
      expect((await waiting).status).toBe(200);
      const values = seen.map((s) => s.progress);
      for (let i = 1; i < values.length; i++) expect(values[i]!, JSON.stringify(seen)).toBeGreaterThanOrEqual(values[i - 1]!);
      expect(
        seen.some((s) => /^Sampling step \d+\/8, image 2\/2$/.test(s.textinfo ?? '')),
        JSON.stringify(seen),
      ).toBe(true);
      expect(
        seen.every((s) => !/Sampling step 0\/1/.test(s.textinfo ?? '')),
        JSON.stringify(seen),
      ).toBe(true);
    } finally {
      fake.state.faults.apply({ slow: null });
    }
  });
});

describe('inpaint as A1111 does it', () => {
  it('the result is pasted into the original through the blurred mask; unapplied inpaint fields are named', async () => {
    const init = redSquare(64).toString('base64');
    const half = makePngWith(64, 64, (x) => (x < 32 ? [255, 255, 255, 255] : [0, 0, 0, 255])).toString('base64');
    const { images, info } = await render('img2img', {
      prompt: 'inpaint me',
      init_images: [init],
      mask: half,
      mask_blur: 8,
      inpainting_fill: 0,
      inpaint_full_res: true,
      inpaint_full_res_padding: 32,
      width: 64,
      height: 64,
      steps: 1,
    });
    expect(images).toHaveLength(1);
    expect(info.warnings.join('\n')).toMatch(/inpainting_fill: 0 \(fill\) not applied/);
    expect(info.warnings.join('\n')).toMatch(/inpaint_full_res: not applied/);
    const graph = [...fake.state.queue.history.values()].map((h: any) => JSON.stringify(h)).find((h) => h.includes('inpaint me'))!;
    expect(graph).toContain('"class_type":"ImageCompositeMasked"');
    expect(graph).toMatch(/"paste_mask_blur":\{[^}]*"class_type":"ImageBlur"/);
  });
});

describe('edit models from standard clients', () => {
  for (const model of ['imagegen-flux-kontext', 'imagegen-qwen-image-edit']) {
    it(`${model}: plain img2img edits from init_images, plain txt2img renders`, async () => {
      const init = redSquare(96).toString('base64');
      const edit = await render('img2img', { model, prompt: 'make it blue', init_images: [`data:image/png;base64,${init}`], width: 96, height: 96, steps: 1 });
      expect(edit.images).toHaveLength(1);
      expect(edit.info.warnings.join('\n')).toMatch(/edit source/);
      const t = await render('txt2img', { model, prompt: 'a cube', width: 64, height: 64, steps: 1 });
      expect(sizeOf(t.images[0]!)).toEqual({ width: 64, height: 64 });
    });
  }
});

describe('interrupt and skip as A1111 does them', () => {
  it('interrupt: the waiting txt2img answers 200 with the images finished before it, and says so', async () => {
    // Item 0 renders; item 1 hangs in its sampler until interrupted.
    onFinishedPrompt(1, () => fake.state.faults.apply({ hang: { count: 1, nodeClass: 'KSampler' } }));
    const waiting = post('/sdapi/v1/txt2img', { prompt: 'stop me', batch_size: 3, width: 64, height: 64, steps: 1, seed: 7 });
    await hanging();
    // webuiapi / SillyTavern send it with a JSON content type and no body.
    const stop = await raw('POST', '/sdapi/v1/interrupt', { 'content-type': 'application/json' });
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({});
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.json.images).toHaveLength(1);
    const info = JSON.parse(r.json.info);
    expect(info).toMatchObject({ interrupted: true, all_seeds: [7] });
    expect(info.infotexts).toHaveLength(1);
  });

  it('skip ends the current image of a batch and goes on with the next', async () => {
    fake.state.faults.apply({ hang: { count: 1, nodeClass: 'KSampler' } });
    const waiting = post('/sdapi/v1/txt2img', { prompt: 'skip one', batch_size: 2, width: 64, height: 64, steps: 1, seed: 20 });
    await hanging();
    const skip = await raw('POST', '/sdapi/v1/skip', { 'content-type': 'application/json' }, '');
    expect(skip.status).toBe(200);
    expect(skip.json).toBeNull();
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.json.images).toHaveLength(1);
    expect(JSON.parse(r.json.info)).toMatchObject({ skipped: [0], all_seeds: [21] });
  });
});

/** Resolves once /sdapi/v1/progress reports item `jobNo` at least one sampling step in (a preview exists). */
async function sampledOneStep(jobNo = 0): Promise<void> {
  for (;;) {
    const p = (await get('/sdapi/v1/progress?skip_current_image=true')).json;
    if (p.state?.job_no === jobNo && p.state.sampling_step >= 1) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('interrupt and skip keep what was rendered', () => {
  it('an item interrupted mid-sampling answers with its partial image at the output size, said in info', async () => {
    fake.state.faults.apply({ slow: { stepMs: 500 } });
    try {
      const waiting = post('/sdapi/v1/txt2img', { prompt: 'half done', width: 96, height: 64, steps: 20, seed: 3 });
      await sampledOneStep();
      expect((await raw('POST', '/sdapi/v1/interrupt', { 'content-type': 'application/json' })).status).toBe(200);
      const r = await waiting;
      expect(r.status).toBe(200);
      expect(r.json.images).toHaveLength(1);
      expect(sizeOf(r.json.images[0])).toEqual({ width: 96, height: 64 });
      const info = JSON.parse(r.json.info);
      expect(info).toMatchObject({ interrupted: true, partial: [0], all_seeds: [3] });
      expect(info.warnings.join('\n')).toMatch(/image 0 is partial: interrupted after \d+\/20 sampling steps; it is the sampler's last preview/);
    } finally {
      fake.state.faults.apply({ slow: null });
    }
  });

  it('skip during n_iter=3 returns three images, the skipped one partial', async () => {
    onFinishedPrompt(1, () => fake.state.faults.apply({ slow: { stepMs: 500 } }));
    try {
      const waiting = post('/sdapi/v1/txt2img', { prompt: 'skip mid', n_iter: 3, width: 64, height: 64, steps: 20, seed: 30 });
      await sampledOneStep(1);
      // Item 1 is sampling slowly now: skip it, then let item 2 run at full speed.
      expect((await raw('POST', '/sdapi/v1/skip', { 'content-type': 'application/json' }, '')).status).toBe(200);
      fake.state.faults.apply({ slow: null });
      const r = await waiting;
      expect(r.status).toBe(200);
      expect(r.json.images).toHaveLength(3);
      const info = JSON.parse(r.json.info);
      expect(info).toMatchObject({ skipped: [1], partial: [1], all_seeds: [30, 31, 32] });
      expect(info.warnings.join('\n')).toMatch(/image 1 is partial: skipped/);
    } finally {
      fake.state.faults.apply({ slow: null });
    }
  });
});

describe('lenient where A1111 is lenient', () => {
  it('body-less POST routes ignore an empty body whatever its content type', async () => {
    for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
      for (const route of ['/sdapi/v1/interrupt', '/sdapi/v1/skip', '/sdapi/v1/refresh-checkpoints']) {
        const r = await raw('POST', route, { 'content-type': type }, '');
        expect(r.status, `${route} ${type}`).toBe(200);
      }
    }
  });

  it('an empty Content-Type header is no content type: the JSON body parses (A1111 does)', async () => {
    const r = await raw('POST', '/sdapi/v1/txt2img', { 'content-type': '' }, JSON.stringify({ prompt: 'empty type', width: 64, height: 64, steps: 1 }));
    expect(r.status, JSON.stringify(r.json).slice(0, 300)).toBe(200);
    expect(r.json.images).toHaveLength(1);
  });

  it('any body on an unknown route is a 404, not a complaint about the body', async () => {
    const bodies: Array<[Record<string, string>, string]> = [
      [{ 'content-type': 'application/x-www-form-urlencoded' }, 'prompt=x&steps=1'],
      [{ 'content-type': 'multipart/form-data; boundary=XyZ' }, '--XyZ\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nx\r\n--XyZ--\r\n'],
      [{ 'content-type': 'application/json' }, '{not json'],
      [{}, 'whatever'],
    ];
    for (const route of ['/sdapi/v1/txt2imgg', '/nope', '/sdapi/v1/interrogatee']) {
      for (const [headers, body] of bodies) {
        const r = await raw('POST', route, headers, body);
        expect(r.status, `${route} ${JSON.stringify(headers)}`).toBe(404);
        expect(r.json).toEqual({ detail: 'Not Found' });
      }
    }
  });

  it('a JSON body without a content type is read as JSON', async () => {
    const r = await raw('POST', '/sdapi/v1/txt2img', {}, JSON.stringify({ prompt: 'no type', width: 64, height: 64, steps: 1 }));
    expect(r.status).toBe(200);
    expect(r.json.images).toHaveLength(1);
  });

  it('/openapi.json is generated from the zod schemas the routes validate with; /docs serves Swagger UI', async () => {
    const doc = (await get('/openapi.json')).json;
    expect(doc.openapi).toMatch(/^3\./);
    const t2i = doc.paths['/sdapi/v1/txt2img'].post.requestBody.content['application/json'].schema;
    expect(t2i.properties.prompt).toMatchObject({ type: 'string', maxLength: 16384 });
    expect(Object.keys(t2i.properties)).toEqual(expect.arrayContaining(['enable_hr', 'hr_upscaler', 'override_settings', 'extra_images']));
    expect(doc.paths['/sdapi/v1/img2img'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('resize_mode');
    expect(doc.paths['/sdapi/v1/extra-batch-images'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('imageList');
    let docs = await get('/docs');
    if (docs.status === 302) docs = await get(String(docs.headers.location));
    expect(docs.status).toBe(200);
    expect(String(docs.json)).toMatch(/swagger/i);
  });

  it('unknown routes answer FastAPI 404 {"detail":"Not Found"}', async () => {
    const r = await raw('GET', '/sdapi/v1/no-such-route', {});
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ detail: 'Not Found' });
  });
});

const get = (route: string): Promise<Answer> => raw('GET', route, {});

/** Every graph ComfyUI ran for the render, by the node classes it contains. */
function submittedClasses(): Set<string> {
  const classes = new Set<string>();
  for (const item of fake.state.queue.history.values()) {
    const prompt = (item as unknown as { prompt: unknown[] }).prompt[2] as Record<string, { class_type: string }>;
    for (const n of Object.values(prompt)) classes.add(n.class_type);
  }
  return classes;
}

describe('what users tweak, built into the graph', () => {
  it('hires fix: a second pass, the answer has the upscaled size', async () => {
    const { images, info } = await render('txt2img', {
      prompt: 'hires',
      width: 128,
      height: 96,
      steps: 1,
      enable_hr: true,
      hr_scale: 2,
      hr_upscaler: 'Latent',
      hr_second_pass_steps: 1,
    });
    expect(sizeOf(images[0]!)).toEqual({ width: 256, height: 192 });
    expect(info.infotexts[0]).toMatch(/Hires resize: 256x192, Hires upscaler: Latent/);
    const model = await render('txt2img', {
      prompt: 'hires model',
      width: 64,
      height: 64,
      steps: 1,
      enable_hr: true,
      hr_resize_x: 160,
      hr_resize_y: 96,
      hr_upscaler: '4x-UltraSharp',
    });
    expect(sizeOf(model.images[0]!)).toEqual({ width: 160, height: 96 });
    expect(submittedClasses()).toContain('ImageUpscaleWithModel');
  });

  it("LoRA tags apply through LoraLoader; an unknown LoRA is a 400 naming it; /loras lists ComfyUI's", async () => {
    const { info } = await render('txt2img', { prompt: 'a fox <lora:detail-tweaker:0.8>', width: 64, height: 64, steps: 1 });
    expect(info.prompt).toBe('a fox');
    expect(info.infotexts[0]).toMatch(/^a fox <lora:detail-tweaker:0.8>/);
    expect(submittedClasses()).toContain('LoraLoader');
    const bad = await post('/sdapi/v1/txt2img', { prompt: 'x <lora:missing-one:1>' });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ field: 'prompt' });
    expect(bad.json.detail).toMatch(/unknown LoRA "missing-one"/);
    expect((await get('/sdapi/v1/loras')).json).toEqual([
      { name: 'Detail-Tweaker', alias: 'Detail-Tweaker', path: 'style/Detail-Tweaker.safetensors', metadata: {} },
      { name: 'film', alias: 'film', path: 'film.safetensors', metadata: {} },
    ]);
  });

  it('samples_format jpg answers JPEG with the infotext readable by png-info; send_images false answers none', async () => {
    const jpg = await render('txt2img', {
      prompt: 'as jpeg',
      width: 64,
      height: 64,
      steps: 1,
      seed: 5,
      override_settings: { samples_format: 'jpg', jpeg_quality: 70 },
    });
    const bytes = Buffer.from(jpg.images[0]!, 'base64');
    expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
    const info = await post('/sdapi/v1/png-info', { image: `data:image/jpeg;base64,${jpg.images[0]}` });
    expect(info.status).toBe(200);
    expect(info.json.info).toMatch(/^as jpeg\nSteps: 1/);
    expect(info.json.parameters).toMatchObject({ Prompt: 'as jpeg', Steps: '1', Seed: '5', 'Size-1': '64', 'Size-2': '64' });
    const png = await render('txt2img', { prompt: 'as png', width: 64, height: 64, steps: 1 });
    expect((await post('/sdapi/v1/png-info', { image: png.images[0] })).json.parameters.Prompt).toBe('as png');
    const none = await post('/sdapi/v1/txt2img', { prompt: 'no images', width: 64, height: 64, steps: 1, send_images: false });
    expect(none.status).toBe(200);
    expect(none.json.images).toEqual([]);
  });

  it('override_settings_restore_afterwards false keeps the overrides as settings', async () => {
    await render('txt2img', {
      prompt: 'keep',
      width: 64,
      height: 64,
      steps: 1,
      override_settings: { samples_format: 'webp' },
      override_settings_restore_afterwards: false,
    });
    expect((await get('/sdapi/v1/options')).json.samples_format).toBe('webp');
    const next = await render('txt2img', { prompt: 'now webp', width: 64, height: 64, steps: 1 });
    expect(Buffer.from(next.images[0]!, 'base64').subarray(8, 12).toString('latin1')).toBe('WEBP');
    expect((await post('/sdapi/v1/options', { samples_format: 'png' })).status).toBe(200);
  });

  it('resize_mode 1-3 render img2img at the output size', async () => {
    const init = `data:image/png;base64,${redSquare(96).toString('base64')}`;
    for (const mode of [1, 2, 3]) {
      const { images } = await render('img2img', { prompt: 'resize', init_images: [init], resize_mode: mode, width: 128, height: 64, steps: 1 });
      expect(sizeOf(images[0]!)).toEqual({ width: 128, height: 64 });
    }
  });
});

describe('the routes clients call', () => {
  it('extra-single-image and extra-batch-images upscale through ComfyUI as renders', async () => {
    const image = redSquare(40).toString('base64');
    const single = await post('/sdapi/v1/extra-single-image', { image, upscaler_1: 'Lanczos', upscaling_resize: 2 });
    expect(single.status, JSON.stringify(single.json).slice(0, 300)).toBe(200);
    expect(single.headers['x-render-id']).toMatch(/^render-/);
    expect(sizeOf(single.json.image)).toEqual({ width: 80, height: 80 });
    expect(submittedClasses()).toContain('ImageScaleBy');
    const batch = await post('/sdapi/v1/extra-batch-images', {
      imageList: [
        { data: image, name: 'a.png' },
        { data: `data:image/png;base64,${redSquare(20).toString('base64')}`, name: 'b.png' },
      ],
      upscaler_1: '4x-UltraSharp',
      resize_mode: 1,
      upscaling_resize_w: 100,
      upscaling_resize_h: 50,
      upscaling_crop: true,
    });
    expect(batch.status, JSON.stringify(batch.json).slice(0, 300)).toBe(200);
    expect(batch.json.images.map(sizeOf)).toEqual([
      { width: 100, height: 50 },
      { width: 100, height: 50 },
    ]);
    const unknown = await post('/sdapi/v1/extra-single-image', { image, upscaler_1: 'SwinIR 4x' });
    expect(unknown).toMatchObject({ status: 400, json: { field: 'upscaler_1' } });
  });

  it("upscalers lists the methods and ComfyUI's upscale models; memory comes from /system_stats; the rest is honestly empty", async () => {
    const names = (await get('/sdapi/v1/upscalers')).json.map((u: { name: string }) => u.name);
    expect(names).toEqual(expect.arrayContaining(['None', 'Lanczos', 'Nearest', '4x-UltraSharp']));
    expect((await get('/sdapi/v1/latent-upscale-modes')).json).toContainEqual({ name: 'Latent' });
    const memory = (await get('/sdapi/v1/memory')).json;
    expect(memory.ram.total).toBeGreaterThan(0);
    const stats = (await (await fetch(`${fake.url}/system_stats`)).json()) as { system: { ram_total: number }; devices: { vram_total: number }[] };
    expect(memory.ram.total).toBe(stats.system.ram_total);
    expect(memory.cuda.system.total).toBe(stats.devices[0]!.vram_total);
    for (const route of ['hypernetworks', 'face-restorers', 'realesrgan-models', 'sd-modules', 'script-info', 'extensions']) {
      expect((await get(`/sdapi/v1/${route}`)).json, route).toEqual([]);
    }
    for (const route of ['refresh-checkpoints', 'refresh-vae', 'refresh-loras']) {
      const r = await raw('POST', `/sdapi/v1/${route}`, { 'content-type': 'application/json' });
      expect(r.status, route).toBe(200);
      expect(r.json).toBeNull();
    }
  });
});

describe('live progress', () => {
  it('follows batch_size × n_iter with the sampler step, stage and a live preview, and is idle the moment the render returned', async () => {
    fake.state.faults.apply({ slow: { stepMs: 150 } });
    try {
      // A client that polls makes the next prompts ask ComfyUI for previews.
      expect((await get('/sdapi/v1/progress')).json.current_image).toBeNull();
      const waiting = post('/sdapi/v1/txt2img', { prompt: 'watch me', batch_size: 2, n_iter: 2, width: 64, height: 64, steps: 30 });
      let seen: any;
      let ended = false;
      void waiting.finally(() => (ended = true));
      const polled: unknown[] = [];
      // Polled like a client does; ends on the state it waits for, never on a timer.
      while (!ended) {
        const p = (await get('/sdapi/v1/progress')).json;
        polled.push(p);
        if (p.state.sampling_step > 0 && p.current_image) {
          seen = p;
          break;
        }
      }
      expect(seen, JSON.stringify(polled.slice(-3))).toBeDefined();
      expect(seen.state).toMatchObject({ job_count: 4, sampling_steps: 30 });
      expect(seen.state.job_no).toBeGreaterThanOrEqual(0);
      expect(seen.state.job_no).toBeLessThan(4);
      expect(seen.textinfo).toMatch(/^Sampling step \d+\/30, image \d\/4$/);
      expect(seen.progress).toBeGreaterThan(0);
      // ComfyUI's preview frames are JPEG.
      expect(Buffer.from(seen.current_image, 'base64').subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
      expect((await get('/sdapi/v1/progress?skip_current_image=true')).json.current_image).toBeNull();
      await raw('POST', '/sdapi/v1/interrupt', {});
      expect((await waiting).status).toBe(200);
      const after = (await get('/sdapi/v1/progress')).json;
      expect(after.progress).toBe(0);
      expect(after.state.job_count).toBe(0);
      expect(after.textinfo).toBeNull();
      expect(after.current_image).toBeNull();
    } finally {
      fake.state.faults.apply({ slow: null });
    }
  });
});
