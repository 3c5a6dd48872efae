/**
 * RenderService.wait and .answer with what this process's workers tell (src/renders/closed-runs.ts):
 * - a render whose close is told is answered from it and its long poll cancelled; the long poll answers
 *   everything else (a failure, a render attached by key, a result that does not decode, a service with a
 *   payload codec); nothing is left waiting either way;
 * - `answer` prepares the response from the completion as sent and uses it once the render closed with that
 *   same result (told by the workers or by the long poll); another result, or a failed preparation, is
 *   prepared again.
 * The front client is a fake whose long poll is held until the test settles it.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter, type PayloadCodec } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { PlainPayload } from '../../src/contracts/closed-run.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { registry } from '../../src/metrics/metrics.ts';
import { ClosedRuns } from '../../src/renders/closed-runs.ts';
import { RenderFailedError, RenderService, type StartedRender } from '../../src/renders/render-service.ts';

interface LongPoll {
  settle: { resolve: (r: RenderResult) => void; reject: (e: unknown) => void };
  /** Set when the wait cancelled it (withAbortSignal's signal aborted). */
  cancelled: () => boolean;
}

/** A front client: `handle.result()` is a long poll the test settles; withAbortSignal cancels it as the SDK does. */
function fakeFront(codecs: PayloadCodec[] = []): { client: Client; polls: LongPoll[] } {
  const polls: LongPoll[] = [];
  let signal: AbortSignal | undefined;
  const client = {
    options: { loadedDataConverter: { payloadConverter: defaultPayloadConverter, payloadCodecs: codecs } },
    withAbortSignal: async <R>(s: AbortSignal, fn: () => Promise<R>): Promise<R> => {
      signal = s;
      try {
        return await fn();
      } finally {
        signal = undefined;
      }
    },
  } as unknown as Client;
  const handle = {
    workflowId: 'render-1',
    result: () =>
      new Promise<RenderResult>((resolve, reject) => {
        const s = signal;
        s?.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
        polls.push({ settle: { resolve, reject }, cancelled: () => s?.aborted === true });
      }),
  };
  return { client: Object.assign(client, { handle }), polls };
}

const result = (seed: number): RenderResult =>
  ({ renderId: 'render-1', outputs: [], seeds: [seed], backend: 'gpu-a', promptIds: [], timings: [] }) as unknown as RenderResult;
const payloadOf = (value: unknown): PlainPayload => defaultPayloadConverter.toPayload(value) as PlainPayload;
const started = (client: Client, runId?: string): StartedRender => ({
  renderId: 'render-1',
  handle: (client as unknown as { handle: StartedRender['handle'] }).handle,
  attached: runId === undefined,
  ...(runId ? { runId } : {}),
});
/** A RenderService with closes told by its workers (a ClosedRuns), on a fake front client. */
function toldService(codecs: PayloadCodec[] = []) {
  const front = fakeFront(codecs);
  const closed = new ClosedRuns();
  return { ...front, closed, svc: new RenderService(front.client, 'q', undefined, closed) };
}

/** The long poll has been asked (the wait is set up): a microtask turn or a few. */
async function pollAsked(polls: LongPoll[], n = 1): Promise<void> {
  for (let i = 0; i < 100 && polls.length < n; i++) await Promise.resolve();
  expect(polls).toHaveLength(n);
}

async function toldCount(by: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === 'comfy_durable_render_results_told_total');
  return Number(m?.values.find((v) => v.labels.by === by)?.value ?? 0);
}

describe('RenderService.wait with closes told by the workers', () => {
  it('answers from the told close, cancels the long poll, and leaves nothing waiting', async () => {
    const { client, polls, closed, svc } = toldService();
    const before = await toldCount('workers');
    const waiting = svc.wait(started(client, 'run-a'));
    await pollAsked(polls);
    // Another run's close is not this render's.
    closed.closed({ runId: 'run-other', result: payloadOf(result(9)) });
    closed.closed({ runId: 'run-a', result: payloadOf(result(7)) });
    expect(await waiting).toEqual(result(7));
    expect(polls[0]!.cancelled()).toBe(true);
    expect(closed.size).toBe(0);
    expect(await toldCount('workers')).toBe(before + 1);
  });

  it("answers with the long poll's failure when it comes first, and forgets the wait", async () => {
    const { client, polls, closed, svc } = toldService();
    const waiting = svc.wait(started(client, 'run-b'));
    await pollAsked(polls);
    polls[0]!.settle.reject(
      new WorkflowFailedError('failed', ApplicationFailure.nonRetryable('the graph is wrong', 'ComfyValidation'), 'NON_RETRYABLE_FAILURE'),
    );
    await expect(waiting).rejects.toBeInstanceOf(RenderFailedError);
    expect(closed.size).toBe(0);
    // A close told afterwards finds nobody waiting: dropped.
    closed.closed({ runId: 'run-b', result: payloadOf(result(1)) });
    expect(closed.size).toBe(0);
  });

  it('leaves a told result that does not decode to the long poll', async () => {
    const { client, polls, closed, svc } = toldService();
    const before = await toldCount('temporal');
    const waiting = svc.wait(started(client, 'run-c'));
    await pollAsked(polls);
    closed.closed({ runId: 'run-c', result: { metadata: { encoding: new TextEncoder().encode('binary/unknown') }, data: new Uint8Array([1]) } });
    polls[0]!.settle.resolve(result(3));
    expect(await waiting).toEqual(result(3));
    expect(await toldCount('temporal')).toBe(before + 1);
  });

  it('waits on the long poll only for a render it did not start (attached by key) or with a payload codec', async () => {
    for (const [front, runId] of [
      [toldService(), undefined],
      [toldService([{ encode: async (p) => p, decode: async (p) => p }]), 'run-d'],
    ] as const) {
      const { closed, svc } = front;
      const waiting = svc.wait(started(front.client, runId));
      await pollAsked(front.polls);
      expect(closed.size).toBe(0);
      front.polls[0]!.settle.resolve(result(4));
      expect(await waiting).toEqual(result(4));
    }
  });
});

describe('RenderService.answer: the answer prepared while the server records the completion', () => {
  /** A prepare that records the results it was given and answers with their seed. */
  const recorder = () => {
    const seen: number[] = [];
    const prepare = async (r: RenderResult) => {
      seen.push(r.seeds[0]!);
      return `answer for ${r.seeds[0]}`;
    };
    return { seen, prepare };
  };

  it('prepares once, from the completion as sent, and answers with it once that completion is closed', async () => {
    const { client, polls, closed, svc } = toldService();
    const { seen, prepare } = recorder();
    const answering = svc.answer(started(client, 'run-f'), prepare);
    await pollAsked(polls);
    closed.closing({ runId: 'run-f', result: payloadOf(result(7)) });
    // Prepared ahead: before the close is told.
    await Promise.resolve();
    expect(seen).toEqual([7]);
    closed.closed({ runId: 'run-f', result: payloadOf(result(7)) });
    expect(await answering).toBe('answer for 7');
    expect(seen).toEqual([7]);
  });

  it('uses the answer prepared ahead when the long poll tells the same result first', async () => {
    const { client, polls, closed, svc } = toldService();
    const { seen, prepare } = recorder();
    const answering = svc.answer(started(client, 'run-g'), prepare);
    await pollAsked(polls);
    closed.closing({ runId: 'run-g', result: payloadOf(result(8)) });
    polls[0]!.settle.resolve(result(8));
    expect(await answering).toBe('answer for 8');
    expect(seen).toEqual([8]);
  });

  it('prepares again when the run closed with another result than the one sent first (a refused completion)', async () => {
    for (const by of ['workers', 'temporal'] as const) {
      const { client, polls, closed, svc } = toldService();
      const { seen, prepare } = recorder();
      const answering = svc.answer(started(client, 'run-h'), prepare);
      await pollAsked(polls);
      closed.closing({ runId: 'run-h', result: payloadOf(result(1)) });
      if (by === 'workers') closed.closed({ runId: 'run-h', result: payloadOf(result(2)) });
      else polls[0]!.settle.resolve(result(2));
      expect(await answering).toBe('answer for 2');
      expect(seen).toEqual([1, 2]);
    }
  });

  it('prepares again from the closed result when the preparation ahead failed', async () => {
    const { client, polls, closed, svc } = toldService();
    let calls = 0;
    const answering = svc.answer(started(client, 'run-i'), async (r) => {
      calls++;
      if (calls === 1) throw new Error('blob store hiccup');
      return r.seeds[0];
    });
    await pollAsked(polls);
    closed.closing({ runId: 'run-i', result: payloadOf(result(3)) });
    closed.closed({ runId: 'run-i', result: payloadOf(result(3)) });
    expect(await answering).toBe(3);
    expect(calls).toBe(2);
  });
});

describe('RenderService with told closes when the front stops waiting (abortWaits)', () => {
  it('answers 503 at once, cancels the long poll, forgets the wait and builds nothing for it', async () => {
    const { client, polls, closed, svc } = toldService();
    let built = 0;
    const answering = svc.answer(started(client, 'run-j'), async () => ++built);
    await pollAsked(polls);
    svc.abortWaits('the proxy in front of this service is stopping');
    const err = (await answering.catch((e: unknown) => e)) as RenderFailedError;
    expect(err).toBeInstanceOf(RenderFailedError);
    expect(err.status).toBe(503);
    await Promise.resolve();
    expect(polls[0]!.cancelled()).toBe(true);
    expect(closed.size).toBe(0);
    closed.closing({ runId: 'run-j', result: payloadOf(result(1)) });
    closed.closed({ runId: 'run-j', result: payloadOf(result(1)) });
    await Promise.resolve();
    expect(built).toBe(0);
  });
});

describe('ClosedRuns', () => {
  it('tells every wait on a run, and a stopped wait no more', async () => {
    const closed = new ClosedRuns();
    const a = closed.waitFor('run-e');
    const b = closed.waitFor('run-e');
    const c = closed.waitFor('run-e');
    c.stop();
    closed.closed({ runId: 'run-e', result: payloadOf(result(5)) });
    expect(defaultPayloadConverter.fromPayload(await a.result)).toEqual(result(5));
    expect(defaultPayloadConverter.fromPayload(await b.result)).toEqual(result(5));
    // The stopped wait is never told.
    expect(await Promise.race([c.result.then(() => 'told'), Promise.resolve('not told')])).toBe('not told');
    a.stop();
    expect(closed.size).toBe(0);
  });
});
