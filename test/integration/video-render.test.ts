/**
 * Video renders end to end: real Temporal dev server + fake ComfyUI (real MP4s via ffmpeg) + comfy-durable
 * as a child process, driven over HTTP like a vLLM-Omni video client (multipart, urlencoded and JSON).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { makePng } from '../support/fixtures.ts';
import { fakeStats, setFaults, waitFor } from '../faults/helpers.ts';
import { audioStream, ffprobe, videoStream } from '../support/ffprobe.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'cd-video-'));

/** Small and short: the fake encodes real H.264, and the machine is shared. */
const WAN = { model: 'videogen-wan22-5b', prompt: 'a red kite over a beach', size: '320x192', num_frames: 17, fps: 24, num_inference_steps: 2, seed: 42 };
const H3 = {
  model: 'videogen-minimax-h3',
  prompt: 'a drummer in a jazz club, cymbals ringing',
  size: '256x160',
  num_frames: 22,
  num_inference_steps: 3,
  seed: 7,
};

interface Res {
  status: number;
  headers: Headers;
  body: Buffer;
  json: any;
}

async function call(method: string, route: string, body?: string | FormData, headers: Record<string, string> = {}): Promise<Res> {
  const res = await fetch(`${svc.url}${route}`, { method, body, headers });
  const buf = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  try {
    json = JSON.parse(buf.toString('utf8'));
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body: buf, json };
}

const postJson = (route: string, body: unknown, headers: Record<string, string> = {}) =>
  call('POST', route, JSON.stringify(body), { 'content-type': 'application/json', ...headers });

function form(fields: Record<string, unknown>, files: Array<{ field: string; bytes: Buffer; type?: string; name?: string }> = []): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  for (const f of files) fd.append(f.field, new Blob([f.bytes], { type: f.type ?? 'image/png' }), f.name ?? `${f.field}.png`);
  return fd;
}

async function probe(bytes: Buffer, name: string) {
  const file = path.join(tmp, name);
  writeFileSync(file, bytes);
  return ffprobe(file);
}

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, stepMs: 5, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
  // A short stall timeout so the stalled-video test retries in seconds (events from sampling keep others alive).
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    env: { STALL_TIMEOUT_MS: '6000', VIDEO_SYNC_TIMEOUT_S: '120' },
  });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 180_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

describe('POST /v1/videos/sync', () => {
  it('Wan 2.2 (multipart): a playable H.264 MP4 of the requested size, frames and fps, with the vLLM-Omni headers, through a render workflow', async () => {
    const r = await call('POST', '/v1/videos/sync', form(WAN));
    expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
    expect(r.headers.get('content-type')).toBe('video/mp4');
    expect(r.headers.get('x-request-id')).toMatch(/^video_sync-[0-9a-f-]{36}$/);
    expect(r.headers.get('x-model')).toBe('videogen-wan22-5b');
    expect(r.headers.get('x-inference-time-s')).toMatch(/^\d+\.\d{3}$/);
    const renderId = r.headers.get('x-render-id')!;
    expect(renderId).toMatch(/^render-/);
    expect(Number(r.headers.get('content-length'))).toBe(r.body.length);
    const p = await probe(r.body, 'wan.mp4');
    expect(videoStream(p)).toMatchObject({
      codec_name: 'h264',
      profile: 'High',
      pix_fmt: 'yuv420p',
      width: 320,
      height: 192,
      r_frame_rate: '24/1',
      nb_read_frames: '17',
    });
    expect(audioStream(p)).toBeUndefined();
    expect(Number(p.format.duration)).toBeCloseTo(17 / 24, 2);
    const d = await client.workflow.getHandle(renderId).describe();
    expect(d.type).toBe('render');
    expect(d.status.name).toBe('COMPLETED');
  });

  it('MiniMax-H3 t2va (JSON): video plus an AAC LC 32 kHz stereo track', async () => {
    const r = await postJson('/v1/videos/sync', H3);
    expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
    expect(r.headers.get('x-model')).toBe('videogen-minimax-h3');
    const p = await probe(r.body, 'h3.mp4');
    expect(videoStream(p)).toMatchObject({ codec_name: 'h264', width: 256, height: 160, nb_read_frames: '22' });
    expect(audioStream(p)).toMatchObject({ codec_name: 'aac', profile: 'LC', sample_rate: '32000', channels: 2, channel_layout: 'stereo' });
  });
});

const frame = (w: number, h: number, rgb: [number, number, number]) => makePng(w, h, () => [...rgb, 255]);

async function job(id: string): Promise<Res> {
  return call('GET', `/v1/videos/${id}`);
}

/** Polls the job until it is terminal, recording every (status, progress) seen. */
async function follow(id: string, timeoutMs = 90_000): Promise<Array<{ status: string; progress: number }>> {
  const seen: Array<{ status: string; progress: number }> = [];
  await waitFor(
    `video ${id} to finish`,
    async () => {
      const r = await job(id);
      seen.push({ status: r.json.status, progress: r.json.progress });
      return r.json.status === 'completed' || r.json.status === 'failed';
    },
    timeoutMs,
    50,
  );
  return seen;
}

describe('H3 tasks through the durable workflow', () => {
  it('fl2va (multipart): first and last frame files; the graph wires both; the MP4 has stereo audio', async () => {
    const r = await call(
      'POST',
      '/v1/videos/sync',
      form({ ...H3, extra_params: { task: 'fl2va', frame_indices: [0, -1] } }, [
        { field: 'input_reference', bytes: frame(96, 64, [255, 0, 0]) },
        { field: 'input_references', bytes: frame(96, 64, [0, 0, 255]) },
      ]),
    );
    expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
    const p = await probe(r.body, 'fl2va.mp4');
    expect(audioStream(p)).toMatchObject({ codec_name: 'aac', channels: 2, sample_rate: '32000' });
    const t = await call('GET', `/renders/${r.headers.get('x-render-id')}`);
    const g = t.json.graphs[0].graph;
    expect(g.conditioning.class_type).toBe('MiniMaxH3ImageToVideo');
    expect(g[g.conditioning.inputs.first_frame[0]].class_type).toBe('LoadImage');
    expect(g[g.conditioning.inputs.last_frame[0]].class_type).toBe('LoadImage');
    expect(t.json.request.video).toMatchObject({ task: 'fl2va', frames: 22 });
  });

  it('ref2va (JSON, data URLs): references on MiniMaxH3ReferenceToVideo', async () => {
    const refs = [frame(64, 64, [0, 200, 0]), frame(48, 80, [200, 200, 0])].map((b) => `data:image/png;base64,${b.toString('base64')}`);
    const r = await postJson('/v1/videos/sync', {
      ...H3,
      prompt: '<Picture 1> and <Picture 2> dance',
      input_references: refs,
      extra_params: JSON.stringify({ task: 'ref2va' }),
    });
    expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
    const p = await probe(r.body, 'ref2va.mp4');
    expect(videoStream(p)).toMatchObject({ width: 256, height: 160, nb_read_frames: '22' });
    expect(audioStream(p)).toMatchObject({ codec_name: 'aac', channels: 2 });
    const g = (await call('GET', `/renders/${r.headers.get('x-render-id')}`)).json.graphs[0].graph;
    expect(g.conditioning.class_type).toBe('MiniMaxH3ReferenceToVideo');
    expect(g[g.conditioning.inputs['ref_images.ref_image_0'][0]].class_type).toBe('LoadImage');
    expect(g[g.conditioning.inputs['ref_images.ref_image_1'][0]].class_type).toBe('LoadImage');
  });
});

describe('async jobs', () => {
  it('POST /v1/videos (urlencoded) → queued → in_progress → completed with rising progress; /content 404 while running, then plays', async () => {
    // A first, longer job holds the GPU so the second is seen waiting in the queue.
    const slow = { ...WAN, num_inference_steps: 40 };
    await setFaults(fake.url, { slow: { stepMs: 60 } });
    try {
      const first = await call('POST', '/v1/videos', new URLSearchParams(Object.entries(slow).map(([k, v]): [string, string] => [k, String(v)])).toString(), {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(first.status, first.body.toString()).toBe(200);
      await waitFor('the first job to be rendering', async () => (await job(first.json.id)).json.status === 'in_progress');
      const second = await postJson('/v1/videos', { ...slow, seed: 43 });
      expect(second.json).toMatchObject({
        object: 'video',
        status: 'queued',
        progress: 0,
        model: 'videogen-wan22-5b',
        size: '320x192',
        seconds: '0.708',
        num_frames: 17,
        fps: 24,
        media_type: 'video/mp4',
      });
      const a = first.json.id as string;
      const b = second.json.id as string;
      expect(a).toMatch(/^render-/);
      expect((await job(b)).json.status).toBe('queued');
      const early = await call('GET', `/v1/videos/${a}/content`);
      expect(early.status).toBe(404);
      expect(early.json.detail).toBe('Generation is still in-progress');

      const seen = await follow(a);
      const progress = seen.map((s) => s.progress);
      expect(
        progress.some((p) => p > 0 && p < 100),
        JSON.stringify(seen),
      ).toBe(true);
      for (let i = 1; i < progress.length; i++) expect(progress[i]!, JSON.stringify(seen)).toBeGreaterThanOrEqual(progress[i - 1]!);
      expect(seen.at(-1)).toEqual({ status: 'completed', progress: 100 });
      const done = (await job(a)).json;
      expect(done).toMatchObject({ status: 'completed', progress: 100, file_name: `${a}.mp4`, error: null });
      expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at);
      expect(done.inference_time_s).toBeGreaterThan(0);

      const content = await call('GET', `/v1/videos/${a}/content`);
      expect(content.status).toBe(200);
      expect(content.headers.get('content-type')).toBe('video/mp4');
      expect(videoStream(await probe(content.body, 'async.mp4'))).toMatchObject({ codec_name: 'h264', nb_read_frames: '17', width: 320, height: 192 });
      await follow(b);

      // Listing: newest first, paging with after/limit, ascending order.
      const page1 = await call('GET', '/v1/videos?limit=1');
      expect(page1.json).toMatchObject({ object: 'list', has_more: true });
      expect(page1.json.data[0].id).toBe(b);
      const page2 = await call('GET', `/v1/videos?limit=1&after=${b}`);
      expect(page2.json.data[0].id).toBe(a);
      const asc = await call('GET', '/v1/videos?order=asc&limit=100');
      const ids = asc.json.data.map((j: { id: string }) => j.id);
      expect(ids.indexOf(a)).toBeLessThan(ids.indexOf(b));
      expect(asc.json.data.every((j: { object: string }) => j.object === 'video')).toBe(true);
    } finally {
      await setFaults(fake.url, { slow: null });
    }
  });

  it("the OpenAI SDK's videos.create(size='1280x720') on videogen-wan22-5b renders at the nearest grid size inside the budget", async () => {
    // The SDK's body: JSON with model, prompt, seconds (a string) and size.
    const created = await postJson('/v1/videos', {
      model: 'videogen-wan22-5b',
      prompt: 'a kite',
      seconds: '4',
      size: '1280x720',
      num_inference_steps: 1,
      num_frames: 5,
    });
    expect(created.status, created.body.toString()).toBe(200);
    expect(created.json).toMatchObject({ object: 'video', size: '1280x704' });
    // The video object says so, when created and when read back (from the render's memo) after it completed.
    const fitted = expect.stringMatching(/^size: 1280x720 .*: rendering 1280x704$/);
    expect(created.json.warnings).toEqual(expect.arrayContaining([fitted]));
    await follow(created.json.id);
    expect((await job(created.json.id)).json).toMatchObject({ status: 'completed', outcome: 'completed', warnings: expect.arrayContaining([fitted]) });
    const content = await call('GET', `/v1/videos/${created.json.id}/content`);
    expect(content.status).toBe(200);
    expect(videoStream(await probe(content.body, 'sdk-size.mp4'))).toMatchObject({ width: 1280, height: 704 });
  });

  it('a failed render: GET answers the job with its error status, /content 422', async () => {
    await setFaults(fake.url, { executionError: { type: 'exception', node: 'first-sampler', message: 'mat1 and mat2 shapes cannot be multiplied' } });
    const r = await postJson('/v1/videos', { ...WAN, seed: 99 });
    const id = r.json.id as string;
    await follow(id);
    const failed = await job(id);
    expect(failed.status).toBe(500);
    expect(failed.json).toMatchObject({ id, object: 'video', status: 'failed', error: { code: 500 } });
    expect(failed.json.error.message).toMatch(/mat1 and mat2/);
    const content = await call('GET', `/v1/videos/${id}/content`);
    expect(content.status).toBe(422);
  });

  it('DELETE cancels a running render and leaves ComfyUI idle', async () => {
    await setFaults(fake.url, { slow: { stepMs: 100 } });
    try {
      const r = await postJson('/v1/videos', { ...WAN, num_inference_steps: 200, seed: 1234 });
      const id = r.json.id as string;
      await waitFor('sampling to start', async () => (await job(id)).json.progress > 1, 60_000);
      // The A1111 progress route sees the video on the GPU too (same heartbeats).
      await waitFor('/sdapi/v1/progress to show it', async () => {
        const p = (await call('GET', '/sdapi/v1/progress')).json;
        return p.progress > 0 && p.state.sampling_steps === 200;
      });
      const del = await call('DELETE', `/v1/videos/${id}`);
      expect(del.status, del.body.toString()).toBe(200);
      expect(del.json).toEqual({ id, deleted: true, object: 'video.deleted' });
      const queue = (await (await fetch(`${fake.url}/queue`)).json()) as { queue_running: unknown[]; queue_pending: unknown[] };
      expect(queue).toMatchObject({ queue_running: [], queue_pending: [] });
      const stats = await fakeStats(fake.url);
      expect(Object.values(stats.outcomes).flat()).toContain('interrupted');
      expect((await job(id)).status).toBe(404);
      expect((await client.workflow.getHandle(id).describe()).status.name).toBe('CANCELLED');
    } finally {
      await setFaults(fake.url, { slow: null });
    }
  });
});

describe('durability', () => {
  it('a stalled video (silent VAE decode that never ends) is interrupted and retried as a new attempt', async () => {
    await setFaults(fake.url, { hang: { count: 1, nodeClass: 'VAEDecode' } });
    const r = await postJson('/v1/videos/sync', { ...WAN, seed: 555 });
    expect(r.status, r.body.toString().slice(0, 500)).toBe(200);
    expect(videoStream(await probe(r.body, 'stalled.mp4'))!.nb_read_frames).toBe('17');
    const t = (await call('GET', `/renders/${r.headers.get('x-render-id')}`)).json;
    const attempts = t.stages
      .filter((s: { activityType: string }) => s.activityType === 'runPrompt')
      .flatMap((s: { attempts: Array<{ outcome: string; promptId?: string; error?: { type?: string } }> }) => s.attempts);
    expect(
      attempts.map((a: { outcome: string }) => a.outcome),
      JSON.stringify(t.stages),
    ).toEqual(['failed', 'completed']);
    expect(attempts[0].error.type).toBe('ComfyStall');
    // Each attempt is its own ComfyUI prompt, and the stalled one was interrupted there.
    expect(attempts[1].promptId).not.toBe(attempts[0].promptId);
    expect((await fakeStats(fake.url)).outcomes[attempts[0].promptId]).toEqual(['interrupted']);
  });

  it('bad input is a 4xx naming the field, and starts nothing', async () => {
    const before = (await call('GET', '/v1/videos?limit=100')).json.data.length;
    const cases: Array<[string, Record<string, string>, string]> = [
      [JSON.stringify({ model: 'imagegen-flux-dev', prompt: 'x' }), { 'content-type': 'application/json' }, 'model'],
      [JSON.stringify({ model: 'videogen-wan22-5b' }), { 'content-type': 'application/json' }, 'prompt'],
      [JSON.stringify({ ...WAN, num_frames: 5000 }), { 'content-type': 'application/json' }, 'num_frames'],
      [JSON.stringify({ ...WAN, extra_params: { task: 'fl2va' } }), { 'content-type': 'application/json' }, 'extra_params.task'],
    ];
    for (const [body, headers, field] of cases) {
      const res = await call('POST', '/v1/videos/sync', body, headers);
      expect(res.status).toBe(400);
      expect(res.json.error.param).toBe(field);
      expect(res.json.detail).toContain(field);
    }
    const notImage = await call(
      'POST',
      '/v1/videos',
      form({ ...H3, extra_params: { task: 'ref2va' } }, [
        { field: 'input_references', bytes: Buffer.from('ID3 not an image'), type: 'audio/mpeg', name: 'a.mp3' },
      ]),
    );
    expect(notImage.status).toBe(400);
    expect(notImage.json.error.param).toBe('input_references.0');
    expect((await call('GET', '/v1/videos?limit=100')).json.data.length).toBe(before);
  });
});
