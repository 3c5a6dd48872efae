/**
 * The fake's SaveVideo/SaveAudio write real media (ffmpeg), checked with ffprobe against what the real
 * ComfyUI 0.33.0 wrote in ref/real-comfyui (execution-wan22-t2v.json, execution-h3-fl2va.json): the golden
 * Wan and H3 graphs at a small size go through the fake end to end.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { httpClient } from '../../tools/fake-comfyui/testing.ts';
import { audioStream, ffprobe, videoStream } from '../support/ffprobe.ts';

const golden = (name: string): ComfyGraph =>
  JSON.parse(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../golden', `${name}.json`), 'utf8')) as ComfyGraph;

let fake: FakeComfyUI;
let http: ReturnType<typeof httpClient>;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0, stepMs: 0, logLevel: process.env.LOG_LEVEL ?? 'silent' });
  http = httpClient(fake.url);
});
afterAll(async () => {
  await fake.close();
});
beforeEach(async () => {
  await http.post('/__fake/reset');
});

type Out = {
  images?: Array<{ filename: string; subfolder: string; type: string }>;
  animated?: boolean[];
  audio?: Array<{ filename: string; subfolder: string; type: string }>;
};

async function run(g: ComfyGraph): Promise<Record<string, Out>> {
  const { prompt_id } = await http.submit(g);
  const h = await http.waitForHistory<{ outputs: Record<string, Out>; status: { status_str: string; messages: unknown[] } }>(prompt_id);
  expect(h.status.status_str, JSON.stringify(h.status.messages)).toBe('success');
  return h.outputs;
}

const file = (ref: { filename: string; subfolder: string }) => path.join(fake.dataDir, 'output', ref.subfolder, ref.filename);

function wanGraph(prefix: string, seed = 7): ComfyGraph {
  const g = golden('videogen-wan22-5b-t2v');
  Object.assign(g.latent!.inputs, { width: 320, height: 192, length: 17 });
  Object.assign(g.sampler!.inputs, { steps: 2, seed });
  g.save!.inputs.filename_prefix = prefix;
  return g;
}

describe('fake SaveVideo writes playable MP4s', () => {
  it('Wan graph: H.264 High yuv420p, requested size, 17 frames at 24 fps, no audio; output shape and name as recorded', async () => {
    const out = await run(wanGraph('video/ComfyUI'));
    expect(out.save).toEqual({ images: [{ filename: 'ComfyUI_00001_.mp4', subfolder: 'video', type: 'output' }], animated: [true] });
    const p = await ffprobe(file(out.save!.images![0]!));
    expect(p.format.format_name).toContain('mp4');
    expect(p.format.tags).toMatchObject({ major_brand: 'isom', compatible_brands: 'isomiso2avc1mp41' });
    expect(JSON.parse(p.format.tags!.prompt!)).toHaveProperty('save');
    expect(p.streams).toHaveLength(1);
    expect(videoStream(p)).toMatchObject({
      codec_name: 'h264',
      profile: 'High',
      pix_fmt: 'yuv420p',
      width: 320,
      height: 192,
      r_frame_rate: '24/1',
      time_base: '1/12288',
      nb_frames: '17',
      nb_read_frames: '17',
      color_transfer: 'iec61966-2-1',
    });
    expect(Number(videoStream(p)!.duration)).toBeCloseTo(17 / 24, 3);
    // The counter continues after the highest existing file of the prefix.
    const again = await run(wanGraph('video/ComfyUI', 8));
    expect(again.save!.images![0]!.filename).toBe('ComfyUI_00002_.mp4');
  });

  it('H3 graph: 22 frames plus an AAC LC 32 kHz stereo track as long as the video', async () => {
    const g = golden('videogen-minimax-h3-t2va');
    Object.assign(g.conditioning!.inputs, { width: 320, height: 192, length: 22 });
    g.scheduler!.inputs.steps = 2;
    g.save!.inputs.filename_prefix = 'video/MiniMax_H3';
    const out = await run(g);
    expect(out.save).toEqual({ images: [{ filename: 'MiniMax_H3_00001_.mp4', subfolder: 'video', type: 'output' }], animated: [true] });
    const p = await ffprobe(file(out.save!.images![0]!));
    expect(videoStream(p)).toMatchObject({ codec_name: 'h264', profile: 'High', width: 320, height: 192, nb_read_frames: '22' });
    expect(audioStream(p)).toMatchObject({
      codec_name: 'aac',
      profile: 'LC',
      sample_rate: '32000',
      channels: 2,
      channel_layout: 'stereo',
      time_base: '1/32000',
    });
    expect(Number(audioStream(p)!.duration)).toBeCloseTo(22 / 24, 2);
    expect(Number(p.format.duration)).toBeCloseTo(22 / 24, 2);
  });

  it('H3 length off the grid is snapped up (23 → 39 frames), as the node does', async () => {
    const g = golden('videogen-minimax-h3-t2va');
    Object.assign(g.conditioning!.inputs, { width: 128, height: 128, length: 23 });
    g.scheduler!.inputs.steps = 1;
    const out = await run(g);
    expect(videoStream(await ffprobe(file(out.save!.images![0]!)))!.nb_read_frames).toBe('39');
  });

  it('deterministic: the same graph and seed give the same bytes; another seed other bytes', async () => {
    const a = readFileSync(file((await run(wanGraph('video/det', 5))).save!.images![0]!));
    await http.post('/free', { free_memory: true, unload_models: true });
    // After /free the cache is gone: the same graph renders (and encodes) again.
    expect((await run(wanGraph('video/det', 5))).save!.images![0]!.filename).toBe('det_00002_.mp4');
    const b = readFileSync(path.join(fake.dataDir, 'output', 'video', 'det_00002_.mp4'));
    expect(b.equals(a)).toBe(true);
    const c = readFileSync(file((await run(wanGraph('video/det', 6))).save!.images![0]!));
    expect(c.equals(a)).toBe(false);
  });

  it('SaveAudio writes a stereo 32 kHz FLAC under audio/ reported as `audio`', async () => {
    const g = golden('videogen-minimax-h3-t2va');
    Object.assign(g.conditioning!.inputs, { width: 128, height: 128, length: 22 });
    g.scheduler!.inputs.steps = 1;
    g.save_audio = { class_type: 'SaveAudio', inputs: { audio: ['decode_audio', 0], filename_prefix: 'audio/ComfyUI' }, _meta: { title: 'Save audio' } };
    const out = await run(g);
    expect(out.save_audio).toEqual({ audio: [{ filename: 'ComfyUI_00001_.flac', subfolder: 'audio', type: 'output' }] });
    const p = await ffprobe(file(out.save_audio!.audio![0]!));
    expect(p.streams[0]).toMatchObject({ codec_name: 'flac', sample_rate: '32000', channels: 2 });
    expect(Number(p.format.duration)).toBeCloseTo(22 / 24, 2);
  });
});
