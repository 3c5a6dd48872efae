/**
 * What the workers tell their front of a render's close (src/worker/run-closures.ts), on a real server with the
 * real `render` workflow and a mocked runPrompt:
 * - a completed render is told once, with its run id and exactly the result Temporal's `result()` gives;
 * - a completion the server refused (a signal recorded while the workflow task ran: UnhandledCommand) is told
 *   as sent but not as closed; the completion it accepted next is told closed, with what that one decided;
 * - a failed render is not told;
 * - a listener that throws does not reach the SDK (which would shut the worker down);
 * - a Worker without the SDK's native worker (another SDK shape) is reported as not watched.
 */
import { EventEmitter } from 'node:events';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkflowEnv, stopWorkflowEnv } from '../support/workflow-env.ts';
import type { BuiltRender, RenderLimits, RunPromptInput } from '../../src/contracts/activities.ts';
import type { ClosedRun } from '../../src/contracts/closed-run.ts';
import type { PromptRun, RenderRequest, RenderResult } from '../../src/contracts/render.ts';
import { gpuTaskQueue } from '../../src/contracts/task-queues.ts';
import { interruptSignal, type RenderWorkflow } from '../../src/contracts/workflows.ts';
import { OUTCOME_INTERCEPTOR_MODULE } from '../../src/metrics/render-sinks.ts';
import { watchRunClosures } from '../../src/worker/run-closures.ts';
import { WORKFLOWS_PATH } from '../../src/worker/worker.ts';

const TASK_QUEUE = `run-closures-test-${process.pid}`;

Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });

const LIMITS: RenderLimits = {
  stallTimeoutMs: 1_000,
  deadlineMs: 60_000,
  heartbeatTimeoutMs: 10_000,
  maxAttempts: 1,
  backoffInitialMs: 10,
  backoffMaxMs: 25,
  minAttemptMs: 50,
};
const built: BuiltRender = {
  plan: { items: [{ index: 0, seed: 1, graph: { '1': { class_type: 'KSampler', inputs: {}, _meta: { title: 'sampler' } } } }], uploads: [], outputNode: '9' },
  limits: LIMITS,
};
const request = { kind: 'txt2img', model: 'imagegen-test', prompt: 'p', seed: 1, batchSize: 1, nIter: 1, width: 64, height: 64 } as unknown as RenderRequest;

const rendered = (input: RunPromptInput): PromptRun => ({
  promptId: `prompt-${input.renderId}`,
  attempt: input.attempt,
  files: [],
  startedAt: 0,
  finishedAt: 0,
  backend: 'gpu-a',
  outputs: [{ sha256: 'a'.repeat(64), size: 10, mime: 'image/png', width: 64, height: 64 }],
  timings: [],
});

/** Renders whose runPrompt fails; renders whose completion has a signal recorded while its workflow task runs. */
const failing = new Set<string>();
const signalledAtEnd = new Set<string>();
/** The render's outcome sink calls: one per workflow task that reached the end (a refused one included). */
const endings = new Map<string, number>();
const told: ClosedRun[] = [];
/** Completions sent, accepted or not. */
const closings: ClosedRun[] = [];
/** The listener fails each time it is told (sent, closed): the worker must go on regardless. */
let listenerThrows = false;
const events = new EventEmitter();

let env: TestWorkflowEnvironment;
let workers: Worker[] = [];
let running: Promise<unknown>;
let seq = 0;

async function start(id: string) {
  return env.client.workflow.start<RenderWorkflow>('render', { taskQueue: TASK_QUEUE, workflowId: id, args: [request, built] });
}

/** The closes told for `runId`, once at least `n` were (each test waits for what it expects, then checks no more came). */
function toldFor(runId: string, n: number): Promise<ClosedRun[]> {
  return new Promise((resolve) => {
    const check = (): void => {
      const mine = told.filter((t) => t.runId === runId);
      if (mine.length < n) return;
      events.off('told', check);
      resolve(mine);
    };
    events.on('told', check);
    check();
  });
}

const decoded = (run: ClosedRun): RenderResult => defaultPayloadConverter.fromPayload<RenderResult>(run.result);

beforeAll(async () => {
  env = await startWorkflowEnv();
  const common = { connection: env.nativeConnection, namespace: env.namespace ?? 'default' };
  const general = await Worker.create({
    ...common,
    taskQueue: TASK_QUEUE,
    workflowsPath: WORKFLOWS_PATH,
    activities: { stopPrompts: async () => {} },
    interceptors: { workflowModules: [OUTCOME_INTERCEPTOR_MODULE] },
    sinks: {
      renderOutcome: {
        // Runs before the workflow task's completion is sent: a signal recorded here makes the server refuse it.
        completed: {
          fn: async (info) => {
            endings.set(info.workflowId, (endings.get(info.workflowId) ?? 0) + 1);
            if (signalledAtEnd.delete(info.workflowId)) await env.client.workflow.getHandle(info.workflowId).signal(interruptSignal);
          },
        },
        failed: { fn: () => undefined },
      },
    },
  });
  expect(
    watchRunClosures(general, {
      closing: (run) => {
        closings.push(run);
        if (listenerThrows) throw new Error('a listener that fails');
      },
      closed: (run) => {
        told.push(run);
        events.emit('told');
        if (listenerThrows) throw new Error('a listener that fails');
      },
    }),
  ).toBe(true);
  workers = [
    general,
    await Worker.create({
      ...common,
      taskQueue: gpuTaskQueue(TASK_QUEUE),
      activities: {
        runPrompt: async (input: RunPromptInput): Promise<PromptRun> => {
          if (failing.has(input.renderId)) throw ApplicationFailure.nonRetryable('the graph is wrong', 'ComfyValidation');
          return rendered(input);
        },
      },
    }),
  ];
  running = Promise.all(workers.map((w) => w.run()));
}, 120_000);

afterAll(() => stopWorkflowEnv(env, workers, running));

describe('run closures told by the worker', () => {
  it("tells a completed render once, with its run id and the result Temporal's result() gives", async () => {
    const handle = await start(`closures-done-${++seq}`);
    const result = await handle.result();
    const [run, ...more] = await toldFor(handle.firstExecutionRunId, 1);
    expect(more).toEqual([]);
    expect(decoded(run!)).toEqual(result);
    expect(result.outputs).toHaveLength(1);
    // Its completion was told as it was sent, with the same bytes.
    expect(closings.filter((c) => c.runId === run!.runId)).toEqual([run]);
  });

  it('does not tell a completion the server refused, and tells the one it accepted next', async () => {
    const id = `closures-refused-${++seq}`;
    signalledAtEnd.add(id);
    const handle = await start(id);
    const result = await handle.result();
    // The workflow reached its end twice: the completion of the first was refused (the signal came in meanwhile).
    expect(endings.get(id)).toBe(2);
    expect(result.interrupted).toBe(true);
    const [run, ...more] = await toldFor(handle.firstExecutionRunId, 1);
    // What the first completion carried (no interrupt) was never told closed: only the accepted one's result.
    expect(more).toEqual([]);
    expect(decoded(run!)).toEqual(result);
    // Both completions were told as they were sent: the refused one with what it carried, then the accepted one.
    const sent = closings.filter((c) => c.runId === run!.runId);
    expect(sent.map((c) => decoded(c).interrupted ?? false)).toEqual([false, true]);
    expect(sent[1]).toEqual(run);
  });

  it('tells nothing of a failed render', async () => {
    const id = `closures-failed-${++seq}`;
    failing.add(id);
    const handle = await start(id);
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    // A completed render started after it is told: had the failure been told, it would have been told before.
    const next = await start(`closures-after-failed-${++seq}`);
    await next.result();
    await toldFor(next.firstExecutionRunId, 1);
    expect(told.filter((t) => t.runId === handle.firstExecutionRunId)).toEqual([]);
  });

  it("keeps a listener's failure out of the worker: the render completes and its close is still told", async () => {
    listenerThrows = true;
    try {
      const handle = await start(`closures-listener-fails-${++seq}`);
      const result = await handle.result();
      const [run] = await toldFor(handle.firstExecutionRunId, 1);
      expect(decoded(run!)).toEqual(result);
    } finally {
      listenerThrows = false;
    }
    // The worker still runs renders.
    const next = await start(`closures-after-listener-${++seq}`);
    await next.result();
  });

  it('reports a worker without the native worker it knows as not watched', () => {
    const listener = { closed: () => undefined };
    expect(watchRunClosures({} as Worker, listener)).toBe(false);
    expect(watchRunClosures({ nativeWorker: { pollWorkflowActivation: () => undefined } } as unknown as Worker, listener)).toBe(false);
  });
});
