/**
 * Video renders end to end: real Temporal dev server + fake ComfyUI (real MP4s via ffmpeg) + comfy-durable
 * as a child process, driven over HTTP like a vLLM-Omni video client (multipart, urlencoded and JSON).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../src/fake-comfyui/server.ts';
import { makePng, redSquare } from '../support/fixtures.ts';
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
const H3 = { model: 'videogen-minimax-h3', prompt: 'a drummer in a jazz club, cymbals ringing', size: '256x160', num_frames: 22, num_inference_steps: 3, seed: 7 };

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
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url });
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
    expect(videoStream(p)).toMatchObject({ codec_name: 'h264', profile: 'High', pix_fmt: 'yuv420p', width: 320, height: 192, r_frame_rate: '24/1', nb_read_frames: '17' });
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
