/**
 * The `render` workflow's logic in-process, with mocked activities: attempts and their backoff, the item
 * deadline, interrupt, skip, cancellation, priority inheritance and the status query. Temporal's
 * TestWorkflowEnvironment runs a local dev server from the `temporal` CLI already on the machine (its
 * time-skipping server is a download, which cannot work offline); the limits in the input are short, so
 * nothing here waits on real backoff.
 */
import { EventEmitter } from 'node:events';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkflowEnv, stopWorkflowEnv } from '../support/workflow-env.ts';
import type { BuiltRender, RenderActivities, RenderLimits, RunPromptInput, StopPromptsInput } from '../../src/contracts/activities.ts';
import type { PromptRun, RenderRequest } from '../../src/contracts/render.ts';
import { RENDER_OUTCOME } from '../../src/contracts/search-attributes.ts';
import { WORKFLOWS_PATH } from '../../src/worker/worker.ts';
import { GaveUpFailureType, NotDispatchedFailureType } from '../../src/contracts/failures.ts';
import { gpuTaskQueue } from '../../src/contracts/task-queues.ts';
import { interruptSignal, renderStatusQuery, skipSignal, type RenderWorkflow } from '../../src/contracts/workflows.ts';

const TASK_QUEUE = `render-workflow-test-${process.pid}`;

// Workers log every state change (INFO) and every failed attempt (WARN), which these tests cause on purpose.
Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });

const LIMITS: RenderLimits = {
  stallTimeoutMs: 1_000,
  deadlineMs: 60_000,
  heartbeatTimeoutMs: 10_000,
  maxAttempts: 4,
  backoffInitialMs: 10,
  backoffMaxMs: 25,
  minAttemptMs: 50,
};

/** One attempt as the mocked runPrompt saw it. */
interface Call {
  input: RunPromptInput;
  priorityKey: number | undefined;
  startToCloseMs: number;
  cancelled?: boolean;
}

type Script = (input: RunPromptInput) => Promise<PromptRun>;

const scripts = new Map<string, Script>();
const calls = new Map<string, Call[]>();
const stops = new Map<string, StopPromptsInput[]>();
/** 'call' on every runPrompt attempt (with its render id), so tests wait on events instead of polling. */
const events = new EventEmitter();

function callsOf(renderId: string): Call[] {
  let list = calls.get(renderId);
  if (!list) calls.set(renderId, (list = []));
  return list;
}

/** Resolves once `renderId` has had `n` runPrompt attempts. */
function attemptsSeen(renderId: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (callsOf(renderId).length < n) return;
      events.off('call', check);
      resolve();
    };
    events.on('call', check);
    check();
  });
}

const activities: RenderActivities = {
  async runPrompt(input: RunPromptInput): Promise<PromptRun> {
    const info = Context.current().info;
    callsOf(input.renderId).push({ input, priorityKey: info.priority?.priorityKey, startToCloseMs: info.startToCloseTimeoutMs });
    events.emit('call');
    const script = scripts.get(input.renderId);
    if (!script) throw ApplicationFailure.nonRetryable(`no script for ${input.renderId}`, 'TestSetup');
    return script(input);
  },
  async stopPrompts(input: StopPromptsInput): Promise<void> {
    const id = Context.current().info.workflowExecution?.workflowId ?? '';
    stops.set(id, [...(stops.get(id) ?? []), input]);
  },
};

/** A rendered item: one output blob named after its item and attempt. */
function rendered(input: RunPromptInput, backend = 'gpu-a'): PromptRun {
  const sha256 = `${input.item}`.padStart(64, '0');
  return {
    promptId: `prompt-${input.item}-${input.attempt}`,
    attempt: input.attempt,
    files: [],
    startedAt: 0,
    finishedAt: 0,
    backend,
    outputs: [{ sha256, size: 1, mime: 'image/png' }],
    timings: [{ stage: 'prompt', ms: 1 }],
  };
}

/** The render's RenderOutcome search attribute (what `renders list --outcome` filters on). */
async function outcomeTags(renderId: string): Promise<string[] | undefined> {
  return (await env.client.workflow.getHandle(renderId).describe()).typedSearchAttributes.get(RENDER_OUTCOME);
}

const failure = (type: string, details: Record<string, unknown> = {}, nonRetryable = false): ApplicationFailure =>
  ApplicationFailure.create({ type, message: `${type} in test`, nonRetryable, details: [details] });

/** A prompt that runs until the render stops it: heartbeats (cancellation arrives with them), then rethrows. */
async function untilCancelled(input: RunPromptInput): Promise<PromptRun> {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat({ backend: 'gpu-a', promptId: `prompt-${input.item}-${input.attempt}`, lastEventAt: Date.now() }), 20);
  try {
    await ctx.cancelled;
  } catch (err) {
    const call = callsOf(input.renderId).find((c) => c.input === input);
    if (call && err instanceof CancelledFailure) call.cancelled = true;
    throw err;
  } finally {
    clearInterval(beat);
  }
  throw new Error('unreachable: ctx.cancelled only rejects');
}

function requestFor(items: number): RenderRequest {
  return { kind: 'txt2img', model: 'test-model', prompt: 'p', seed: 100, batchSize: items, nIter: 1 } as unknown as RenderRequest;
}

function builtFor(items: number, limits: Partial<RenderLimits> = {}): BuiltRender {
  return {
    plan: {
      items: Array.from({ length: items }, (_, index) => ({
        index,
        seed: 100 + index,
        graph: { '1': { class_type: 'KSampler', inputs: {}, _meta: { title: 'sampler' } } },
      })),
      uploads: [],
      outputNode: '9',
    },
    limits: { ...LIMITS, ...limits },
  };
}

let env: TestWorkflowEnvironment;
let workers: Worker[] = [];
let running: Promise<unknown>;
let seq = 0;

/** Starts a render whose attempts follow `script`. */
async function start(script: Script, opts: { items?: number; limits?: Partial<RenderLimits>; priorityKey?: number } = {}) {
  const workflowId = `wf-test-${++seq}-${Date.now()}`;
  scripts.set(workflowId, script);
  const items = opts.items ?? 1;
  return env.client.workflow.start<RenderWorkflow>('render', {
    taskQueue: TASK_QUEUE,
    workflowId,
    args: [requestFor(items), builtFor(items, opts.limits)],
    ...(opts.priorityKey !== undefined ? { priority: { priorityKey: opts.priorityKey } } : {}),
  });
}

/** Timer durations (ms) the workflow started, in order: the pauses between attempts. */
async function timerDurations(workflowId: string): Promise<number[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const t = e.timerStartedEventAttributes?.startToFireTimeout;
    return t ? [Number(t.seconds ?? 0) * 1_000 + Math.round((t.nanos ?? 0) / 1e6)] : [];
  });
}

async function failureOf(promise: Promise<unknown>): Promise<WorkflowFailedError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return err as WorkflowFailedError;
}

beforeAll(async () => {
  env = await startWorkflowEnv();
  const common = {
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    maxHeartbeatThrottleInterval: '50ms',
    defaultHeartbeatThrottleInterval: '50ms',
  };
  workers = [
    await Worker.create({ ...common, taskQueue: TASK_QUEUE, workflowsPath: WORKFLOWS_PATH, activities: { stopPrompts: activities.stopPrompts } }),
    await Worker.create({ ...common, taskQueue: gpuTaskQueue(TASK_QUEUE), activities: { runPrompt: activities.runPrompt } }),
  ];
  running = Promise.all(workers.map((w) => w.run()));
}, 120_000);

afterAll(() => stopWorkflowEnv(env, workers, running));

describe('render workflow', () => {
  it('renders each item once, in order, and reports seeds, prompts, backends and outputs', async () => {
    const handle = await start(async (input) => rendered(input, input.item === 0 ? 'gpu-a' : 'gpu-b'), { items: 2 });
    const result = await handle.result();
    expect(result).toMatchObject({ seeds: [100, 101], promptIds: ['prompt-0-1', 'prompt-1-1'], backend: 'gpu-a,gpu-b' });
    expect(result.outputs.map((o) => o.sha256.at(-1))).toEqual(['0', '1']);
    expect(callsOf(handle.workflowId).map((c) => [c.input.item, c.input.attempt])).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect(await timerDurations(handle.workflowId)).toEqual([]);
    const status = await handle.query(renderStatusQuery);
    expect(status).toMatchObject({ stage: 'done', items: 2, promptIds: ['prompt-0-1', 'prompt-1-1'] });
    expect(status.attempts.map((a) => a.outcome)).toEqual(['completed', 'completed']);
    expect(await outcomeTags(handle.workflowId)).toEqual(['completed']);
  });

  it('an output of one colour tags the render blank', async () => {
    const handle = await start(
      async (input) => {
        const run = rendered(input);
        return input.item === 1 ? { ...run, outputs: [{ ...run.outputs[0]!, blank: 'black' as const }] } : run;
      },
      { items: 2 },
    );
    expect((await handle.result()).outputs.map((o) => o.blank)).toEqual([undefined, 'black']);
    expect(await outcomeTags(handle.workflowId)).toEqual(['blank']);
  });

  it('retries a retryable failure with exponential backoff (or the delay the failure asks for), telling each attempt where earlier ones ran', async () => {
    const handle = await start(async (input) => {
      if (input.attempt === 1) throw failure('ComfyStall', { backend: 'gpu-b' });
      if (input.attempt === 2) throw failure('ComfyPromptLost');
      if (input.attempt === 3) throw failure('ComfyBackendUnhealthy', { backend: 'gpu-c', retryAfterMs: 33 });
      return rendered(input);
    });
    const result = await handle.result();
    expect(result.promptIds).toEqual(['prompt-0-4']);
    const seen = callsOf(handle.workflowId).map((c) => c.input);
    expect(seen.map((i) => i.attempt)).toEqual([1, 2, 3, 4]);
    expect(seen.map((i) => i.previousBackends)).toEqual([undefined, ['gpu-b'], ['gpu-b', ''], ['gpu-b', '', 'gpu-c']]);
    // 10 ms, doubled (20 ms), then the failure's own 33 ms instead of the capped 25.
    expect(await timerDurations(handle.workflowId)).toEqual([10, 20, 33]);
    const status = await handle.query(renderStatusQuery);
    expect(status.attempts.map((a) => [a.attempt, a.outcome, a.type ?? ''])).toEqual([
      [1, 'failed', 'ComfyStall'],
      [2, 'failed', 'ComfyPromptLost'],
      [3, 'failed', 'ComfyBackendUnhealthy'],
      [4, 'completed', ''],
    ]);
  });

  it('an attempt its worker handed back undispatched is sent again at once with the same number, not counted (more of them than maxAttempts)', async () => {
    let handedBack = 0;
    const handle = await start(async (input) => {
      if (handedBack < 5) {
        handedBack++;
        throw failure(NotDispatchedFailureType);
      }
      return rendered(input);
    });
    const result = await handle.result();
    expect(result.promptIds).toEqual(['prompt-0-1']);
    expect(callsOf(handle.workflowId).map((c) => [c.input.attempt, c.input.previousBackends])).toEqual(Array.from({ length: 6 }, () => [1, undefined]));
    expect(await timerDurations(handle.workflowId)).toEqual([]);
    expect((await handle.query(renderStatusQuery)).attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'completed']]);
  });

  it('gives up after maxAttempts, backoff capped, and stops the prompts the attempts may have left running', async () => {
    const handle = await start(async (input) => {
      throw failure('ComfyStall', { backend: `gpu-${input.attempt}` });
    });
    const err = await failureOf(handle.result());
    expect(err.cause).toBeInstanceOf(ApplicationFailure);
    expect(err.cause).toMatchObject({ type: GaveUpFailureType, message: expect.stringContaining('within 4 attempts; last attempt: ComfyStall') });
    expect(callsOf(handle.workflowId)).toHaveLength(4);
    expect(await timerDurations(handle.workflowId)).toEqual([10, 20, 25]);
    expect(stops.get(handle.workflowId)).toEqual([{ attemptBackends: ['gpu-1', 'gpu-2', 'gpu-3', 'gpu-4'], item: 0, attempts: 4 }]);
    // The class is the last attempt's, not the wrapper's.
    expect(await outcomeTags(handle.workflowId)).toEqual(['failed', 'failed:ComfyStall']);
  });

  it('a non-retryable failure ends the render at once, with nothing to stop', async () => {
    const handle = await start(async () => {
      throw failure('ComfyExecution', { nodeId: 'sampler' }, true);
    });
    const err = await failureOf(handle.result());
    expect(err.cause?.cause).toMatchObject({ type: 'ComfyExecution' });
    expect(await outcomeTags(handle.workflowId)).toEqual(['failed', 'failed:ComfyExecution']);
    expect(callsOf(handle.workflowId)).toHaveLength(1);
    expect(stops.get(handle.workflowId)).toBeUndefined();
  });

  it('gives up when the next attempt would not fit in the item deadline, and no attempt may run past it', async () => {
    const deadlineMs = 600;
    const handle = await start(
      async () => {
        throw failure('ComfyStall');
      },
      { limits: { deadlineMs, maxAttempts: 50, backoffInitialMs: 100, backoffMaxMs: 1_000 } },
    );
    const err = await failureOf(handle.result());
    expect(err.cause).toMatchObject({ type: GaveUpFailureType, message: expect.stringContaining('s deadline') });
    const seen = callsOf(handle.workflowId);
    // 100 + 200 ms of backoff fit in 600 ms; the 400 ms after the third attempt does not (fewer under load).
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen.length).toBeLessThanOrEqual(3);
    for (const c of seen) expect(c.startToCloseMs).toBeLessThanOrEqual(deadlineMs);
  });

  it('interrupt stops the running item and ends the render with the items finished so far', async () => {
    const handle = await start(async (input) => (input.item === 0 ? rendered(input) : untilCancelled(input)), { items: 3 });
    await attemptsSeen(handle.workflowId, 2);
    await handle.signal(interruptSignal);
    const result = await handle.result();
    expect(result).toMatchObject({ interrupted: true, seeds: [100], promptIds: ['prompt-0-1'] });
    expect(result.outputs).toHaveLength(1);
    const seen = callsOf(handle.workflowId);
    expect(seen.map((c) => c.input.item)).toEqual([0, 1]);
    expect(seen[1]!.cancelled).toBe(true);
    expect(stops.get(handle.workflowId)).toBeUndefined();
    expect(await outcomeTags(handle.workflowId)).toEqual(['partial', 'interrupted']);
  });

  it('skip ends the running item and goes on with the next', async () => {
    const handle = await start(async (input) => (input.item === 0 ? untilCancelled(input) : rendered(input)), { items: 2 });
    await attemptsSeen(handle.workflowId, 1);
    await handle.signal(skipSignal);
    const result = await handle.result();
    expect(result).toMatchObject({ skipped: [0], seeds: [101], promptIds: ['prompt-1-1'] });
    expect(result.interrupted).toBeUndefined();
    expect(callsOf(handle.workflowId)[0]!.cancelled).toBe(true);
    expect(await outcomeTags(handle.workflowId)).toEqual(['partial', 'skipped']);
  });

  it('a cancelled render cancels its running attempt, waits for it, stops its prompts and ends cancelled', async () => {
    const handle = await start(async (input) => (input.attempt === 1 ? Promise.reject(failure('ComfyStall', { backend: 'gpu-b' })) : untilCancelled(input)));
    await attemptsSeen(handle.workflowId, 2);
    await handle.cancel();
    const err = await failureOf(handle.result());
    expect(err.cause).toBeInstanceOf(CancelledFailure);
    expect(callsOf(handle.workflowId)[1]!.cancelled).toBe(true);
    expect(stops.get(handle.workflowId)).toEqual([{ attemptBackends: ['gpu-b'], item: 0, attempts: 2 }]);
  });

  it('the status query reports the running item and every attempt so far', async () => {
    const handle = await start(async (input) => (input.attempt === 1 ? Promise.reject(failure('ComfyStall', { backend: 'gpu-b' })) : untilCancelled(input)), {
      items: 2,
    });
    await attemptsSeen(handle.workflowId, 2);
    const status = await handle.query(renderStatusQuery);
    expect(status).toMatchObject({ stage: 'waiting', item: 0, items: 2, promptIds: [] });
    expect(status.attempts).toEqual([{ item: 0, attempt: 1, outcome: 'failed', type: 'ComfyStall', message: 'ComfyStall in test', backend: 'gpu-b' }]);
    await handle.cancel();
    await failureOf(handle.result());
  });

  it('prompt attempts inherit the render’s priority (the GPU queue hands out lower keys first)', async () => {
    const urgent = await start(async (input) => (input.attempt === 1 ? Promise.reject(failure('ComfyStall')) : rendered(input)), { priorityKey: 1 });
    await urgent.result();
    expect(callsOf(urgent.workflowId).map((c) => c.priorityKey)).toEqual([1, 1]);
    const plain = await start(async (input) => rendered(input));
    await plain.result();
    expect(callsOf(plain.workflowId)[0]!.priorityKey ?? 0).toBe(0);
  });
});
