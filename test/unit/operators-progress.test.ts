/**
 * `/sdapi/v1/progress` from Temporal state: the A1111 body (idle is exactly all zeros, which SillyTavern
 * relies on) and LiveProgress's arithmetic against a stub Temporal client (visibility + describe + query).
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { msNumberToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { a1111Progress } from '../../src/api/a1111/discovery-routes.ts';
import { LiveProgress } from '../../src/progress/live-progress.ts';
import { ProgressMemory } from '../../src/progress/render-progress.ts';
import { readJob } from '../../src/api/video/jobs.ts';
import { textinfo } from '../../src/api/a1111/discovery-routes.ts';

const { temporal } = proto;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const SCHEDULED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;

const IDLE = {
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
  },
  current_image: null,
  textinfo: null,
};

interface StubRender {
  id: string;
  status?: string;
  startTime: number;
  /** runPrompt pending state, heartbeat, schedule and start. */
  gpu?: { state: number; beat?: object; startedAt?: number; scheduledAt?: number };
  query?: { item: number; items: number; stage?: string; interrupted?: boolean; promptIds?: string[]; attempts?: unknown[] };
  /** A video render (GET /v1/videos/{id} reads it). */
  video?: boolean;
  /** Still listed by visibility although describe() says it closed. */
  listedOnly?: boolean;
  /** Just started: describe() knows it, visibility does not yet. */
  invisible?: boolean;
}

function stubClient(renders: StubRender[], calls: string[] = []): Client {
  const visible = renders.filter((r) => !r.invisible && (r.status === undefined || r.status === 'RUNNING' || r.listedOnly));
  return {
    options: { loadedDataConverter: { payloadConverter: defaultPayloadConverter } },
    workflowService: {
      listWorkflowExecutions: async (req: { query: string }) => {
        calls.push(req.query);
        // Newest first, as visibility lists.
        const sorted = [...visible].sort((a, b) => b.startTime - a.startTime);
        return { executions: sorted.map((r) => ({ execution: { workflowId: r.id }, startTime: msNumberToTs(r.startTime) })) };
      },
    },
    workflow: {
      count: async () => {
        throw new Error('only needed beyond 1000 running renders');
      },
      getHandle: (id: string) => {
        const r = renders.find((x) => x.id === id)!;
        return {
          describe: async () => ({
            workflowId: id,
            status: { name: r.status ?? 'RUNNING' },
            startTime: new Date(r.startTime),
            memo: {
              images: r.query?.items ?? 1,
              ...(r.video ? { kind: 'video', frames: 17, fps: 16, size: '320x192', warnings: ['size: 320x200 fitted: rendering 320x192'] } : {}),
            },
            typedSearchAttributes: { get: () => 'videogen-wan22-5b' },
            historyLength: 12,
            raw: {
              pendingActivities: r.gpu
                ? [
                    {
                      activityType: { name: 'runPrompt' },
                      state: r.gpu.state,
                      ...(r.gpu.startedAt ? { lastStartedTime: msNumberToTs(r.gpu.startedAt) } : {}),
                      ...(r.gpu.scheduledAt ? { scheduledTime: msNumberToTs(r.gpu.scheduledAt) } : {}),
                      ...(r.gpu.beat ? { heartbeatDetails: { payloads: [defaultPayloadConverter.toPayload(r.gpu.beat)] } } : {}),
                    },
                  ]
                : [],
            },
          }),
          query: async () => r.query ?? { item: 0, items: 1 },
        };
      },
    },
  } as unknown as Client;
}

const NOW = 1_800_000_000_000;

describe('A1111 progress body', () => {
  it('idle is all zeros, exactly', () => {
    expect(a1111Progress({ jobCount: 0 })).toEqual(IDLE);
  });

  it('a running render fills progress, eta, job and sampling steps', () => {
    const body = a1111Progress({
      jobCount: 3,
      current: {
        renderId: 'render-1',
        item: 1,
        items: 2,
        value: 5,
        max: 20,
        progress: 0.625,
        etaSeconds: 4.567,
        itemStartedAt: Date.UTC(2026, 4, 1, 22, 10, 5),
      },
    });
    expect(body).toMatchObject({
      progress: 0.625,
      eta_relative: 4.57,
      state: { job: 'render-1', job_count: 3, job_no: 1, sampling_step: 5, sampling_steps: 20, job_timestamp: '20260501221005' },
    });
  });
});

/** A front's progress over `renders`, remembering what it showed in `memory` (a fresh one per test by default). */
const live = (renders: StubRender[], calls?: string[], memory = new ProgressMemory()) =>
  new LiveProgress({ client: stubClient(renders, calls), namespace: 'default', taskQueue: 'renders', now: () => NOW, cacheMs: 0, memory });

describe('LiveProgress', () => {
  it('no running render: job_count 0 and nothing else', async () => {
    const calls: string[] = [];
    expect(await live([], calls).snapshot()).toEqual({ jobCount: 0 });
    expect(calls).toEqual(["WorkflowType = 'render' AND TaskQueue = 'renders' AND ExecutionStatus = 'Running'"]);
  });

  it('the render on the GPU: (item + step/steps) / items, eta from the item’s pace; waiting ones count', async () => {
    const newer = Array.from({ length: 12 }, (_, i): StubRender => ({ id: `w${i}`, startTime: NOW - 500 + i }));
    const snap = await live([
      // More waiting renders than are described: the oldest (on the GPU) must still be found.
      ...newer,
      {
        id: 'a',
        startTime: NOW - 60_000,
        query: { item: 1, items: 2 },
        gpu: { state: STARTED, startedAt: NOW - 10_000, beat: { backend: 'b', promptId: 'p', node: 'sampler', value: 5, max: 20, lastEventAt: NOW } },
      },
      { id: 'b', startTime: NOW - 5_000, gpu: { state: SCHEDULED } },
      { id: 'c', startTime: NOW - 1_000 },
    ]).snapshot();
    expect(snap.jobCount).toBe(15);
    expect(snap.current).toMatchObject({ renderId: 'a', item: 1, items: 2, value: 5, max: 20, node: 'sampler', promptId: 'p', progress: (1 + 5 / 20) / 2 });
    // 10 s for a quarter of item 1: 30 s left of it, and it is the last item.
    expect(snap.current!.etaSeconds).toBeCloseTo(30, 5);
  });

  it('before the first step: progress from finished items only, no eta', async () => {
    const snap = await live([
      {
        id: 'a',
        startTime: NOW - 1_000,
        query: { item: 2, items: 4 },
        gpu: { state: STARTED, startedAt: NOW - 500, beat: { backend: 'b', promptId: '', lastEventAt: NOW } },
      },
    ]).snapshot();
    expect(snap.current).toMatchObject({ progress: 0.5, value: 0, max: 0, etaSeconds: 0 });
  });

  it('renders visibility still lists as running but describe() says closed are not counted', async () => {
    const snap = await live([
      { id: 'done', status: 'COMPLETED', listedOnly: true, startTime: NOW - 9_000 },
      { id: 'a', startTime: NOW - 1_000, gpu: { state: SCHEDULED } },
    ]).snapshot();
    expect(snap).toEqual({ jobCount: 1, imageCount: 1 });
  });

  it('a render this front saw return is left out at once, cache or not', async () => {
    const p = live([{ id: 'a', startTime: NOW - 1_000, gpu: { state: SCHEDULED } }]);
    expect((await p.snapshot()).jobCount).toBe(1);
    p.finished('a');
    expect(await p.snapshot(['a'])).toEqual({ jobCount: 0 });
  });

  it('a render this front just started counts before visibility shows it', async () => {
    const snap = await live([{ id: 'new', startTime: NOW, invisible: true }]).snapshot(['new']);
    expect(snap.jobCount).toBe(1);
  });

  it('caches briefly and shares one refresh between concurrent polls', async () => {
    const calls: string[] = [];
    let t = NOW;
    const p = new LiveProgress({ client: stubClient([], calls), namespace: 'default', taskQueue: 'renders', now: () => t, cacheMs: 500 });
    await Promise.all([p.snapshot(), p.snapshot(), p.snapshot()]);
    t += 499;
    await p.snapshot();
    expect(calls).toHaveLength(1);
    t += 2;
    await p.snapshot();
    expect(calls).toHaveLength(2);
  });
});

describe('one progress for a render, on every route, that never goes back', () => {
  // One front: both routes share what it has shown.
  const memory = new ProgressMemory();
  const front = (renders: StubRender[]) => live(renders, undefined, memory);
  const videoJob = async (renders: StubRender[], id: string) => (await readJob(stubClient(renders), id, undefined, memory)).job;
  const decoding = { backend: 'b', promptId: 'p', node: 'decode', value: 0, max: 1, lastEventAt: NOW, fraction: 0.7342, phase: 'decoding', item: 0, items: 1 };

  it('/v1/videos and /sdapi/v1/progress show the same number for the same video (×100, rounded down), and its stage', async () => {
    const renders: StubRender[] = [
      { id: 'video-same', video: true, startTime: NOW - 60_000, gpu: { state: STARTED, startedAt: NOW - 50_000, beat: decoding } },
    ];
    const snap = await front(renders).snapshot();
    expect(a1111Progress(snap).progress).toBe(0.7342);
    expect(textinfo(snap)).toBe('Decoding (VAE) image 1/1');
    const job = await videoJob(renders, 'video-same');
    expect(job).toMatchObject({ status: 'in_progress', progress: 73, stage: 'decoding' });
    // The video object lists what was changed from the request.
    expect(job.warnings).toEqual(['size: 320x200 fitted: rendering 320x192']);
  });

  it('an interrupt: while the stopped prompt winds down, neither route drops to 0 or claims to wait for a GPU', async () => {
    const running: StubRender = { id: 'video-stop', video: true, startTime: NOW - 60_000, gpu: { state: STARTED, startedAt: NOW - 50_000, beat: decoding } };
    expect((await front([running]).snapshot()).current?.progress).toBe(0.7342);
    // The attempt has ended (the prompt stopped); the workflow has not returned yet.
    const stopping: StubRender = { ...running, gpu: undefined, query: { item: 0, items: 1, stage: 'waiting', interrupted: true, promptIds: [], attempts: [] } };
    const snap = await front([stopping]).snapshot();
    expect(snap).toMatchObject({ pending: 'stopping', pendingProgress: 0.7342 });
    expect(a1111Progress(snap).progress).toBe(0.7342);
    expect(textinfo(snap)).toBe('Stopping (interrupted)');
    expect((await videoJob([stopping], 'video-stop')).progress).toBe(73);
  });

  it('a skip: the next item being handed to a GPU says so (not "Waiting for a GPU"), and progress stays where the skipped item was', async () => {
    const first: StubRender = {
      id: 'batch-skip',
      startTime: NOW - 20_000,
      query: { item: 0, items: 2, stage: 'waiting', promptIds: [], attempts: [] },
      gpu: { state: STARTED, startedAt: NOW - 10_000, beat: { ...decoding, fraction: 0.9, phase: 'sampling', item: 0, items: 2 } },
    };
    expect((await front([first]).snapshot()).current?.progress).toBe(0.45);
    const next: StubRender = {
      ...first,
      query: { item: 1, items: 2, stage: 'waiting', promptIds: ['p0'], attempts: [] },
      gpu: { state: SCHEDULED, scheduledAt: NOW - 1_000 },
    };
    const snap = await front([next]).snapshot();
    expect(snap).toMatchObject({ pending: 'starting', pendingProgress: 0.5 });
    expect(textinfo(snap)).toBe('Starting image 2/2');
    // Not picked up for longer than a hand-over takes: then it does wait for a GPU.
    const waiting = await front([{ ...next, id: 'batch-wait', gpu: { state: SCHEDULED, scheduledAt: NOW - 30_000 } }]).snapshot();
    expect(textinfo(waiting)).toBe('Waiting for a GPU');
  });

  it('a retry starting the item afresh does not take the shown progress back', async () => {
    const r: StubRender = { id: 'retry', startTime: NOW - 20_000, gpu: { state: STARTED, startedAt: NOW - 10_000, beat: { ...decoding, fraction: 0.6 } } };
    expect((await front([r]).snapshot()).current?.progress).toBe(0.6);
    const again = await front([{ ...r, gpu: { state: STARTED, startedAt: NOW - 1_000, beat: { ...decoding, fraction: 0.05, phase: 'encoding' } } }]).snapshot();
    expect(again.current).toMatchObject({ progress: 0.6, phase: 'encoding' });
  });
});

describe('one number on both progress routes', () => {
  it('/v1/videos shows the value /sdapi/v1/progress shows, ×100 rounded down, also next to a percent boundary', async () => {
    const { percent, progressValue } = await import('../../src/progress/render-progress.ts');
    // Seen on a real Wan render: a fraction of 0.0499996 was 0.05 on /sdapi/v1/progress and 4 on /v1/videos.
    for (const f of [0, 0.0499996, 0.05, 0.33999, 0.34, 0.123456, 0.99, 0.999951, 1, 1.2, -0.1, Number.NaN]) {
      expect(percent(f)).toBe(Math.floor(progressValue(f) * 100 + 1e-9));
    }
    expect(progressValue(0.0499996)).toBe(0.05);
    expect(percent(0.0499996)).toBe(5);
    expect(percent(0.0499)).toBe(4);
    expect(percent(0.29)).toBe(29);
  });
});
