/**
 * `GET /sdapi/v1/progress` from live Temporal state while renders run on the fake ComfyUI: progress from
 * runPrompt's heartbeat (step / steps) and the workflow's item / items, running + waiting renders in
 * `job_count`, and exactly all zeros when idle (SillyTavern polls until `job_count === 0`).
 */
import { STAGE_ENDS } from '../../src/activities/item-progress.ts';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;

interface Progress {
  progress: number;
  eta_relative: number;
  state: {
    job: string;
    job_count: number;
    job_no: number;
    sampling_step: number;
    sampling_steps: number;
    job_timestamp: string;
    skipped: boolean;
    interrupted: boolean;
  };
  current_image: null;
  textinfo: null;
}

const IDLE: Progress = {
  progress: 0,
  eta_relative: 0,
  state: {
    skipped: false,
    interrupted: false,
    stopping_generation: false,
    job: '',
    job_count: 0,
    job_timestamp: '0',
    job_no: 0,
    sampling_step: 0,
    sampling_steps: 0,
  } as Progress['state'],
  current_image: null,
  textinfo: null,
};

const progress = async (): Promise<Progress> => (await fetch(`${svc.url}/sdapi/v1/progress`)).json() as Promise<Progress>;

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
  // A short heartbeat timeout so heartbeats (throttled to a fraction of it) reach Temporal often.
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { HEARTBEAT_TIMEOUT_MS: '3000' } });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

it('reports the render on the GPU, the renders waiting for it, and all zeros once idle', async () => {
  expect(await progress()).toEqual(IDLE);

  // 20 steps × 150 ms per item: two renders, the first with two items, share one GPU slot. Seeds far apart:
  // ComfyUI (and the fake) caches a sampler whose inputs it has seen, which would skip the steps.
  await fetch(`${fake.url}/__fake/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ slow: { stepMs: 150 } }),
  });
  const body = (seed: number, batch: number) =>
    JSON.stringify({ prompt: 'progress', model: 'imagegen-flux-dev', width: 128, height: 128, seed, batch_size: batch });
  const renders = [1, 2].map((i) =>
    fetch(`${svc.url}/sdapi/v1/txt2img`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(i * 10, i === 1 ? 2 : 1) }).then(
      async (r) => ({
        status: r.status,
        id: r.headers.get('x-render-id'),
      }),
    ),
  );
  let done = false;
  void Promise.all(renders).then(() => {
    done = true;
  });

  const seen: Progress[] = [];
  while (!done) {
    seen.push(await progress());
    await new Promise((r) => setTimeout(r, 150));
  }
  const finished = await Promise.all(renders);
  expect(finished.map((r) => r.status)).toEqual([200, 200]);
  const ids = finished.map((r) => r.id);

  // Both renders were counted at once, in images as A1111 counts (2 + 1): one rendering, one waiting for the GPU.
  expect(Math.max(...seen.map((p) => p.state.job_count))).toBe(3);
  // Mid-sampling snapshots from heartbeats: a step of 20, progress strictly inside (0, 1), an ETA.
  const sampling = seen.filter((p) => p.state.sampling_steps === 20 && p.state.sampling_step > 0 && p.state.sampling_step < 20);
  expect(sampling.length).toBeGreaterThan(0);
  for (const p of sampling) {
    expect(ids).toContain(p.state.job);
    expect(p.progress).toBeGreaterThan(0);
    expect(p.progress).toBeLessThan(1);
    expect(p.state.job_timestamp).toMatch(/^\d{14}$/);
    const items = p.state.job === ids[0] ? 2 : 1;
    // Within an item, sampling follows loading and text encoding; decode and save follow it (item-progress.ts).
    const E = STAGE_ENDS.image;
    expect(p.progress).toBeCloseTo((p.state.job_no + E.encoding + ((E.sampling - E.encoding) * p.state.sampling_step) / 20) / items, 3);
  }
  expect(sampling.some((p) => p.eta_relative > 0)).toBe(true);
  // The two-item render's second item reports at least half done.
  expect(seen.some((p) => p.state.job === ids[0] && p.state.job_no === 1 && p.progress >= 0.5)).toBe(true);
  for (const p of seen) {
    expect(p.progress).toBeGreaterThanOrEqual(0);
    expect(p.progress).toBeLessThanOrEqual(1);
  }

  // Idle the moment both renders returned: exactly zeros, no waiting for visibility to catch up.
  expect(await progress()).toEqual(IDLE);
});
