/**
 * Fault suite for video: front (`api`) and worker as separate processes on one task queue, as in
 * production. A worker SIGKILLed in the middle of a video is restarted; the new attempt re-attaches to the
 * prompt still running in ComfyUI (no second render, no interrupt) and the client gets the MP4 it waited for.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { ffprobe, videoStream } from '../support/ffprobe.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { expectRenderedOnce, fakeStats, scenario, setFaults, waitProgress, waitRunning } from './helpers.ts';
import { runPromptAttempts } from './history.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let worker: TestService;
let front: TestService;
let client: Client;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-video-'));

const ENV = { STALL_TIMEOUT_MS: '6000', HEARTBEAT_TIMEOUT_MS: '4000', POLL_INTERVAL_MS: '200', SHUTDOWN_GRACE_MS: '1000' };

beforeAll(async () => {
  const taskQueue = `renders-video-${Date.now().toString(36)}`;
  [temporal, fake] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: path.join(dataDir, 'comfyui'), stepMs: 50, logLevel: 'silent' }),
  ]);
  const common = { temporalAddress: temporal.address, comfyUrl: fake.url, dataDir, taskQueue };
  worker = await startService({ ...common, mode: 'worker', env: ENV });
  front = await startService({ ...common, mode: 'api', env: ENV });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 120_000);

afterAll(async () => {
  await Promise.all([front?.kill('SIGKILL'), worker?.kill('SIGKILL')]);
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

describe('video worker restarts', () => {
  scenario(
    'worker SIGKILLed mid-video, restarted -> the new attempt re-attaches, rendered once, the MP4 plays',
    async () => {
      // 60 steps of 200 ms: a 12 s sampler, long enough to kill and restart a worker in the middle of it.
      await setFaults(fake.url, { slow: { stepMs: 200 } });
      const body = { model: 'videogen-minimax-h3', prompt: 'kill the worker mid-video', size: '192x128', num_frames: 22, num_inference_steps: 61, seed: 31 };
      const pending = fetch(`${front.url}/v1/videos/sync`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      await worker.kill('SIGKILL');
      await worker.restart();
      const res = await pending;
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(res.status, bytes.toString().slice(0, 500)).toBe(200);
      const file = path.join(dataDir, 'killed.mp4');
      writeFileSync(file, bytes);
      const p = await ffprobe(file);
      expect(videoStream(p)).toMatchObject({ codec_name: 'h264', width: 192, height: 128, nb_read_frames: '22' });
      expect(p.streams.some((s) => s.codec_type === 'audio')).toBe(true);
      const stats = await fakeStats(fake.url);
      expectRenderedOnce(stats, { prompts: 1 });
      expect(stats.interrupts).toBe(0);
      const attempts = await runPromptAttempts(client, res.headers.get('x-render-id')!);
      expect(attempts.map((a) => a.outcome)).toEqual(['timed-out', 'completed']);
      expect(attempts[1]!.promptId).toBe(promptId);
    },
    90_000,
  );
});
