import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ComfyClient } from '../../src/comfyui/client.ts';
import { ComfyExecutionError, ComfyInterruptedError, ComfyPromptLostError, ComfyStallError } from '../../src/comfyui/errors.ts';
import type { EventSession } from '../../src/comfyui/event-stream.ts';
import type { ComfyEvent } from '../../src/comfyui/events.ts';
import { followPrompt } from '../../src/comfyui/follow.ts';
import type { FollowProgress } from '../../src/comfyui/follow-types.ts';
import { submitAndFollow } from '../../src/comfyui/submit-and-follow.ts';
import type { ComfyGraph } from '../../src/comfyui/graph.ts';
import { derivePromptId } from '../../src/comfyui/prompt-id.ts';
import { ComfyStub } from './comfyui-stub.ts';

const graph: ComfyGraph = {
  '9': { class_type: 'SaveImage', inputs: { filename_prefix: 'job', images: ['8', 0] }, _meta: { title: 'Save' } },
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves once the client's socket has received an event matching `match` (replayed events included). */
function sessionSaw(session: EventSession, match: (e: ComfyEvent) => boolean): Promise<void> {
  let resolveSeen!: () => void;
  const seen = new Promise<void>((resolve) => (resolveSeen = resolve));
  const unsubscribe = session.subscribe({ onEvent: (e) => match(e) && resolveSeen() });
  return seen.finally(unsubscribe);
}
const promptEvent = (type: ComfyEvent['type'], id: string) => (e: ComfyEvent) =>
  e.type === type && (e.data as { prompt_id?: string } | undefined)?.prompt_id === id;

let stub: ComfyStub;
let client: ComfyClient;
let session: EventSession | undefined;
let n = 0;

beforeEach(async () => {
  stub = await new ComfyStub().listen();
  client = new ComfyClient({ baseUrl: stub.url, timeouts: { requestMs: 2000, wsOpenMs: 2000, wsPingIntervalMs: 0 } });
});
afterEach(async () => {
  await session?.close();
  session = undefined;
  await client.close();
  await stub.stop();
});

/** open socket → submit with its client id (the documented caller sequence). */
async function submit(): Promise<{ id: string; session: EventSession }> {
  session = await client.openEventStream();
  const id = derivePromptId(['render', n++, Date.now()]);
  await client.submitPrompt({ graph, promptId: id, clientId: session.clientId });
  return { id, session };
}

/** Requests that are polling (status or queue reads), as opposed to the final history read. */
function pollCount(): number {
  return stub.count('GET', '/queue') + stub.count('GET', '/api/jobs');
}

describe('followPrompt', () => {
  it('happy path resolves right after executing:null, with no polling, even with a 10 s poll interval', async () => {
    const { id, session } = await submit();
    const progress: FollowProgress[] = [];
    const started = Date.now();
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 30_000, pollIntervalMs: 10_000, onProgress: (p) => progress.push(p) });
    stub.start(id);
    stub.executing(id, '3');
    stub.progress(id, '3', 1, 20);
    stub.progress(id, '3', 2, 20);
    stub.succeed(id, [{ filename: 'job_00001_.png', subfolder: 'r1' }]);
    const r = await follow;
    expect(Date.now() - started).toBeLessThan(1000);
    expect(r.via).toBe('event');
    expect(r.files).toEqual([{ nodeId: '9', key: 'images', filename: 'job_00001_.png', subfolder: 'r1', type: 'output' }]);
    expect(r.outputs['9']).toBeDefined();
    expect(pollCount()).toBe(0);
    expect(progress.some((p) => p.node === '3' && p.value === 2 && p.max === 20 && p.state === 'running')).toBe(true);
    expect(progress.every((p) => p.promptId === id && typeof p.lastEventAt === 'number')).toBe(true);
  });

  it('sees events that arrived between submit and followPrompt (replay buffer)', async () => {
    const { id, session } = await submit();
    stub.start(id);
    stub.succeed(id);
    await sessionSaw(session, promptEvent('execution_success', id)); // everything arrived before we follow
    const r = await followPrompt(client, { promptId: id, session, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    expect(r.via).toBe('event');
    expect(pollCount()).toBe(0);
  });

  it('ignores events of other prompts on the same socket', async () => {
    const { id, session } = await submit();
    const other = derivePromptId(['other']);
    stub.enqueue(other, session.clientId);
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    let done = false;
    void follow.then(() => (done = true));
    stub.start(other);
    stub.succeed(other);
    // The follower's listener sees the same socket's events in the same order; one more macrotask lets a
    // wrongly resolved follow settle before the check.
    await sessionSaw(session, promptEvent('execution_success', other));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    stub.start(id);
    stub.succeed(id, [{ filename: 'mine.png' }]);
    expect((await follow).files[0]?.filename).toBe('mine.png');
  });

  it('execution_error → ComfyExecutionError with node details and OOM detection (retryable)', async () => {
    const { id, session } = await submit();
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    stub.start(id);
    stub.fail(id, {
      node_id: '3',
      node_type: 'KSampler',
      exception_type: 'torch.OutOfMemoryError',
      exception_message: 'Allocation on device \nThis error means you ran out of memory on your GPU.\n\nTIPS: ...',
    });
    const err = (await follow.catch((e: unknown) => e)) as ComfyExecutionError;
    expect(err).toBeInstanceOf(ComfyExecutionError);
    expect(err.nodeId).toBe('3');
    expect(err.nodeType).toBe('KSampler');
    expect(err.exceptionType).toBe('torch.OutOfMemoryError');
    expect(err.isOutOfMemory).toBe(true);
    expect(err.retryable).toBe(true);
    expect(err.type).toBe('ComfyOutOfMemory');
  });

  it('a non-OOM node exception is not retryable', async () => {
    const { id, session } = await submit();
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    stub.start(id);
    stub.fail(id, { node_id: '4', node_type: 'VAELoader', exception_type: 'FileNotFoundError', exception_message: 'ae.safetensors' });
    const err = (await follow.catch((e: unknown) => e)) as ComfyExecutionError;
    expect(err.isOutOfMemory).toBe(false);
    expect(err.retryable).toBe(false);
    expect(err.type).toBe('ComfyExecution');
    expect(err.message).toContain('node 4 (VAELoader)');
  });

  it('interrupted → ComfyInterruptedError', async () => {
    const { id, session } = await submit();
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    stub.start(id);
    stub.interruptPrompt(id);
    await expect(follow).rejects.toBeInstanceOf(ComfyInterruptedError);
  });

  it('socket dropped mid-run: reconnects with a FRESH client id and still resolves', async () => {
    const { id, session } = await submit();
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 60_000, pollIntervalMs: 120_000 });
    stub.start(id);
    stub.progress(id, '3', 1, 20);
    await sessionSaw(session, (e) => e.type === 'progress');
    stub.dropSockets();
    await stub.until('the follower to reconnect', () => stub.connectedIds.length === 2);
    expect(stub.connectedIds[1]).not.toBe(stub.connectedIds[0]);
    // The prompt's events go to the old id (dropped); completion is seen through the status broadcast.
    stub.succeed(id);
    const started = Date.now();
    const r = await follow;
    // Far below the 120 s poll interval: the status broadcast on the new socket, not a poll, found the end.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(r.via).toBe('poll');
  });

  it('socket dropped and cannot come back: falls back to polling every pollInterval', async () => {
    const { id, session } = await submit();
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 5000, pollIntervalMs: 150 });
    stub.start(id);
    stub.rejectWs = true;
    stub.dropSockets();
    await stub.until('two queue polls', () => stub.count('GET', '/queue') >= 2);
    stub.succeed(id);
    const r = await follow;
    expect(r.via).toBe('poll');
    expect(r.files).toHaveLength(1);
  });

  it('stall: no events and a static queue for stallTimeout → ComfyStallError (retryable)', async () => {
    const { id, session } = await submit();
    stub.start(id); // running, then silence (a hung node)
    const started = Date.now();
    const err = (await followPrompt(client, { promptId: id, session, stallTimeoutMs: 400, pollIntervalMs: 10_000 }).catch(
      (e: unknown) => e,
    )) as ComfyStallError;
    const took = Date.now() - started;
    expect(err).toBeInstanceOf(ComfyStallError);
    expect(err.retryable).toBe(true);
    expect(err.state).toBe('running');
    expect(took).toBeGreaterThanOrEqual(390); // never before stallTimeout
    expect(took).toBeLessThan(15_000); // and not after some unrelated, much longer timer
  });

  it('slow but alive (events more often than stallTimeout) is not a stall', async () => {
    const { id, session } = await submit();
    // Events every 250 ms against a 1.5 s stall timeout: a 6× margin for a loaded machine's late timers.
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 1500, pollIntervalMs: 60_000 });
    stub.start(id);
    for (let i = 1; i <= 10; i++) {
      await sleep(250);
      stub.progress(id, '3', i, 10);
    }
    stub.succeed(id);
    const r = await follow; // 2.5 s total, well past the stall timeout
    expect(r.files).toHaveLength(1);
  });

  it('a pending prompt behind a moving queue is not a stall', async () => {
    const { id, session } = await submit();
    const ahead = [derivePromptId(['a1']), derivePromptId(['a2']), derivePromptId(['a3'])];
    // Make the others run first: move ours behind them.
    stub.pending = stub.pending.filter((p) => p.id !== id);
    for (const a of ahead) stub.enqueue(a, 'someone-else');
    stub.enqueue(id, session.clientId);
    // The queue moves every 800 ms against a 2 s stall timeout; 2.4 s in all, so a static-queue rule would stall.
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 2000, pollIntervalMs: 100 });
    for (const a of ahead) {
      stub.start(a);
      await sleep(800);
      stub.succeed(a);
    }
    stub.start(id);
    stub.succeed(id);
    await expect(follow).resolves.toMatchObject({ promptId: id });
  });

  it('abort signal rejects with an AbortError and stops following', async () => {
    const { id, session } = await submit();
    const ac = new AbortController();
    const follow = followPrompt(client, { promptId: id, session, signal: ac.signal, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    stub.start(id);
    setTimeout(() => ac.abort(new Error('client went away')), 50);
    const err = (await follow.catch((e: unknown) => e)) as Error & { type: string; retryable: boolean };
    expect(err.name).toBe('AbortError');
    expect(err.type).toBe('ComfyAborted');
    expect(err.retryable).toBe(false);
  });

  it('re-attach without a session: prompt already finished → result from polling', async () => {
    const { id } = await submit();
    stub.start(id);
    stub.succeed(id, [{ filename: 'done.png' }]);
    const r = await followPrompt(client, { promptId: id, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    expect(r.files[0]?.filename).toBe('done.png');
  });

  it('re-attach after a ComfyUI restart → ComfyPromptLostError (retryable)', async () => {
    const { id } = await submit();
    stub.start(id);
    stub.restart();
    const err = (await followPrompt(client, { promptId: id, stallTimeoutMs: 5000, pollIntervalMs: 10_000 }).catch((e: unknown) => e)) as ComfyPromptLostError;
    expect(err).toBeInstanceOf(ComfyPromptLostError);
    expect(err.retryable).toBe(true);
  });

  it('ComfyUI restart mid-run (socket drops, prompt gone) → ComfyPromptLostError', async () => {
    stub.jobsApi = false;
    const { id, session } = await submit();
    const follow = followPrompt(client, { promptId: id, session, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    stub.start(id);
    await sessionSaw(session, promptEvent('execution_start', id));
    stub.restart();
    await expect(follow).rejects.toBeInstanceOf(ComfyPromptLostError);
  });
});

describe('submitAndFollow', () => {
  /** Run whatever gets queued, as a zero-time ComfyUI would. */
  function autoRun(): void {
    stub.overrides.set('POST /prompt', () => {
      setTimeout(() => {
        for (const p of [...stub.pending]) {
          stub.start(p.id);
          stub.succeed(p.id);
        }
      }, 5);
      return undefined; // fall through to the default route
    });
  }

  it('submits once, and a second call with the same id re-attaches without resubmitting', async () => {
    autoRun();
    const promptId = derivePromptId(['render-x', 'item', 0]);
    const first = await submitAndFollow(client, { graph, promptId, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    expect(first.reattached).toBe(false);
    expect(first.via).toBe('event');
    const submitted = JSON.parse(stub.requests.find((r) => r.path === '/prompt')!.body.toString('utf8'));
    expect(stub.connectedIds).toContain(submitted.client_id);
    const second = await submitAndFollow(client, { graph, promptId, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    expect(second.reattached).toBe(true);
    expect(second.files).toEqual(first.files);
    expect(stub.count('POST', '/prompt')).toBe(1);
  });

  it('on abort, cancels the prompt in ComfyUI before rejecting', async () => {
    const ac = new AbortController();
    const promptId = derivePromptId(['render-abort']);
    const p = submitAndFollow(client, { graph, promptId, signal: ac.signal, stallTimeoutMs: 5000, pollIntervalMs: 10_000 });
    await stub.until('the prompt queued', () => stub.pending.length > 0);
    stub.start(promptId);
    ac.abort();
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    expect(stub.count('POST', `/api/jobs/${promptId}/cancel`)).toBe(1);
  });
});
