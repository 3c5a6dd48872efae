/**
 * Webhooks in the `render` workflow, in-process with mocked activities (Temporal's TestWorkflowEnvironment on
 * the local `temporal` CLI): a render with a webhook hands its event to a `webhook` child and ends without
 * waiting for it; the child tries on the webhook task queue (never the GPU one) with the same webhook-id and
 * bytes every time, backs off exponentially, gives up when its tries run out or the target is refused; a
 * failed or cancelled render sends `<family>.failed`; a render without a webhook records no patch marker.
 * Operators' view of the delivery (src/operators/webhook.ts) is read from these real histories.
 */
import { EventEmitter } from 'node:events';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkflowEnv, stopWorkflowEnv } from '../support/workflow-env.ts';
import type { BuiltRender, RenderLimits, RunPromptInput, StopPromptsInput } from '../../src/contracts/activities.ts';
import { webhookLine } from '../../src/cli/renders.ts';
import { webhookFromHistory, webhookStarted } from '../../src/operators/webhook.ts';
import type { PromptRun, RenderRequest } from '../../src/contracts/render.ts';
import type { DeliverWebhookInput, WebhookAttemptResult, WebhookTarget } from '../../src/contracts/webhooks.ts';
import { WORKFLOWS_PATH } from '../../src/worker/worker.ts';
import { gpuTaskQueue, webhookTaskQueue } from '../../src/contracts/task-queues.ts';
import { WEBHOOK_PATCH } from '../../src/workflows/render.ts';
import { webhookStatusQuery, type RenderWorkflow, type WebhookWorkflow } from '../../src/contracts/workflows.ts';

const TASK_QUEUE = `webhook-workflow-test-${process.pid}`;

Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });

const LIMITS: RenderLimits = {
  stallTimeoutMs: 1_000,
  deadlineMs: 60_000,
  heartbeatTimeoutMs: 10_000,
  maxAttempts: 2,
  backoffInitialMs: 10,
  backoffMaxMs: 25,
  minAttemptMs: 50,
};

interface Try {
  input: DeliverWebhookInput;
  taskQueue: string;
}

/** Per render: how its runPrompt behaves, how the receiver answers each try, and the tries seen. */
const renders = new Map<string, (input: RunPromptInput) => Promise<PromptRun>>();
const receivers = new Map<string, (n: number) => Promise<WebhookAttemptResult>>();
const tries = new Map<string, Try[]>();
const events = new EventEmitter();
const promptsStarted = new Set<string>();

const triesOf = (renderId: string): Try[] => tries.get(renderId) ?? tries.set(renderId, []).get(renderId)!;

function triesSeen(renderId: string, n: number): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (triesOf(renderId).length < n) return;
      events.off('try', check);
      resolve();
    };
    events.on('try', check);
    check();
  });
}

// Property signatures, not methods: the workers take them as plain functions.
const activities = {
  runPrompt: async (input: RunPromptInput): Promise<PromptRun> => {
    promptsStarted.add(input.renderId);
    events.emit('prompt');
    return renders.get(input.renderId)!(input);
  },
  stopPrompts: async (_input: StopPromptsInput): Promise<void> => {},
  deliverWebhook: async (input: DeliverWebhookInput): Promise<WebhookAttemptResult> => {
    const list = triesOf(input.renderId);
    list.push({ input, taskQueue: Context.current().info.taskQueue });
    events.emit('try');
    return receivers.get(input.renderId)!(input.attempt);
  },
};

const rendered = (input: RunPromptInput): PromptRun => ({
  promptId: `prompt-${input.item}-${input.attempt}`,
  attempt: input.attempt,
  files: [],
  startedAt: 0,
  finishedAt: 0,
  backend: 'gpu-a',
  outputs: [{ sha256: 'a'.repeat(64), size: 10, mime: 'video/mp4', width: 64, height: 48 }],
  timings: [],
});

const accept = async (): Promise<WebhookAttemptResult> => ({ status: 200, address: '127.0.0.1', durationMs: 1 });
const reject503 = async (): Promise<WebhookAttemptResult> => {
  throw ApplicationFailure.create({ type: 'WebhookRejected', message: 'answered 503', details: [{ status: 503 }] });
};

const target = (over: Partial<WebhookTarget> = {}): WebhookTarget => ({
  url: 'https://hooks.example.com/in',
  family: 'video',
  baseUrl: 'https://api.example.com',
  resultPath: '/v1/videos/ID/content',
  limits: { maxAttempts: 4, backoffInitialMs: 20, backoffMaxMs: 40, timeoutMs: 1_000 },
  ...over,
});

function built(webhook?: WebhookTarget): BuiltRender {
  return {
    plan: { items: [{ index: 0, seed: 1, graph: { '1': { class_type: 'KSampler', inputs: {}, _meta: { title: 'sampler' } } } }], uploads: [], outputNode: '9' },
    limits: LIMITS,
    ...(webhook ? { webhook } : {}),
  };
}

const request = { kind: 'video', model: 'videogen-test', prompt: 'p', seed: 1, batchSize: 1, nIter: 1 } as unknown as RenderRequest;

let env: TestWorkflowEnvironment;
let workers: Worker[] = [];
let running: Promise<unknown>;
let seq = 0;

async function start(opts: {
  run?: (input: RunPromptInput) => Promise<PromptRun>;
  receiver?: (n: number) => Promise<WebhookAttemptResult>;
  webhook?: WebhookTarget;
}) {
  const workflowId = `wh-test-${++seq}-${Date.now()}`;
  renders.set(workflowId, opts.run ?? (async (i) => rendered(i)));
  receivers.set(workflowId, opts.receiver ?? accept);
  return env.client.workflow.start<RenderWorkflow>('render', { taskQueue: TASK_QUEUE, workflowId, args: [request, built(opts.webhook)] });
}

/** The webhook child a render started: its id and delivery, from the render's history. */
async function childOf(renderId: string) {
  const history = await env.client.workflow.getHandle(renderId).fetchHistory();
  const initiated = (history.events ?? []).flatMap((e) =>
    e.startChildWorkflowExecutionInitiatedEventAttributes ? [e.startChildWorkflowExecutionInitiatedEventAttributes] : [],
  );
  expect(initiated).toHaveLength(1);
  const started = webhookStarted(initiated[0]!, defaultPayloadConverter)!;
  return { started, handle: env.client.workflow.getHandle<WebhookWorkflow>(started.workflowId), renderHistory: history };
}

beforeAll(async () => {
  env = await startWorkflowEnv();
  const common = { connection: env.nativeConnection, namespace: env.namespace ?? 'default' };
  workers = [
    await Worker.create({ ...common, taskQueue: TASK_QUEUE, workflowsPath: WORKFLOWS_PATH, activities: { stopPrompts: activities.stopPrompts } }),
    // Cancellation reaches an activity with a heartbeat's answer: not throttled to seconds here.
    await Worker.create({
      ...common,
      taskQueue: gpuTaskQueue(TASK_QUEUE),
      activities: { runPrompt: activities.runPrompt },
      maxHeartbeatThrottleInterval: '50ms',
    }),
    await Worker.create({ ...common, taskQueue: webhookTaskQueue(TASK_QUEUE), activities: { deliverWebhook: activities.deliverWebhook } }),
  ];
  running = Promise.all(workers.map((w) => w.run()));
}, 120_000);

afterAll(() => stopWorkflowEnv(env, workers, running));

describe('render workflow with a webhook', () => {
  it('ends without waiting for the receiver; the child retries with back-off on the webhook queue, the same id and bytes each time', async () => {
    // The receiver refuses until the test lets it accept: the render must be done long before.
    let accepting = false;
    // Many tries allowed: however slowly this test gets to accept, the delivery must not have given up first.
    const many = target({ limits: { maxAttempts: 50, backoffInitialMs: 20, backoffMaxMs: 40, timeoutMs: 1_000 } });
    const handle = await start({ webhook: many, receiver: async () => (accepting ? accept() : reject503()) });
    const result = await handle.result();
    expect(result.outputs).toHaveLength(1);
    await triesSeen(handle.workflowId, 3);
    const { started, handle: child } = await childOf(handle.workflowId);
    expect((await child.describe()).status.name).toBe('RUNNING');
    const failing = await child.query(webhookStatusQuery);
    expect(failing).toMatchObject({ state: 'failing', lastStatus: 503, maxAttempts: 50 });
    accepting = true;
    const delivered = await child.result();
    expect(delivered).toMatchObject({ status: 200, webhookId: started.webhookId });
    const list = triesOf(handle.workflowId);
    expect(list.map((t) => t.input.attempt)).toEqual(list.map((_, i) => i + 1));
    expect(new Set(list.map((t) => t.input.webhookId))).toEqual(new Set([started.webhookId]));
    expect(new Set(list.map((t) => t.input.body)).size).toBe(1);
    expect(new Set(list.map((t) => t.taskQueue))).toEqual(new Set([webhookTaskQueue(TASK_QUEUE)]));
    // Exponential back-off between tries, capped: 20, 40, 40, … ms.
    const timers = ((await child.fetchHistory()).events ?? []).flatMap((e) => {
      const t = e.timerStartedEventAttributes?.startToFireTimeout;
      return t ? [Number(t.seconds ?? 0) * 1_000 + Math.round((t.nanos ?? 0) / 1e6)] : [];
    });
    expect(timers).toEqual(list.slice(1).map((_, i) => (i === 0 ? 20 : 40)));
    // The event: OpenAI's shape, ids and links only.
    const event = JSON.parse(list[0]!.input.body) as Record<string, unknown>;
    expect(event).toMatchObject({
      object: 'event',
      type: 'video.completed',
      data: {
        id: handle.workflowId,
        render_id: handle.workflowId,
        status: 'completed',
        url: 'https://api.example.com/v1/videos/ID/content',
        outputs: [{ index: 0, mime: 'video/mp4', url: `https://api.example.com/renders/${handle.workflowId}/outputs/0`, sha256: 'a'.repeat(64) }],
      },
    });
    expect(started.webhookId).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(event.id).toBe(`evt_${started.webhookId!.slice(4)}`);
    // The operators' view, from the child's own history.
    const view = webhookFromHistory(started, await child.fetchHistory(), defaultPayloadConverter);
    expect(view).toMatchObject({ state: 'delivered', attempts: list.length, lastStatus: 200, type: 'video.completed', url: 'https://hooks.example.com/in' });
    expect(view.deliveredAt).toBeDefined();
  });

  it('a failed render sends <family>.failed with the failure type and message', async () => {
    const handle = await start({
      webhook: target({ family: 'image' }),
      run: async () => {
        throw ApplicationFailure.create({ type: 'ComfyValidation', message: 'Value not in list: ckpt_name', nonRetryable: true });
      },
    });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    await triesSeen(handle.workflowId, 1);
    const event = JSON.parse(triesOf(handle.workflowId)[0]!.input.body) as { type: string; data: Record<string, unknown> };
    expect(event.type).toBe('image.failed');
    expect(event.data).toMatchObject({ status: 'failed', error: { type: 'ComfyValidation', message: 'Value not in list: ckpt_name' }, outputs: [] });
    expect(event.data.url).toBeUndefined();
  });

  it('a cancelled render still sends its event (failed, Cancelled), and ends cancelled', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const handle = await start({
      webhook: target(),
      run: async (input) => {
        const ctx = Context.current();
        const beat = setInterval(() => ctx.heartbeat(), 20);
        try {
          await Promise.race([ctx.cancelled, held]);
          return rendered(input);
        } finally {
          clearInterval(beat);
        }
      },
    });
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (!promptsStarted.has(handle.workflowId)) return;
        events.off('prompt', check);
        resolve();
      };
      events.on('prompt', check);
      check();
    });
    await handle.cancel();
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    release();
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    await triesSeen(handle.workflowId, 1);
    const event = JSON.parse(triesOf(handle.workflowId)[0]!.input.body) as { type: string; data: { error: { type: string } } };
    expect(event.type).toBe('video.failed');
    expect(event.data.error.type).toBe('Cancelled');
  });

  it('gives up after its tries, says so, and the render stays completed', async () => {
    const handle = await start({
      webhook: target({ limits: { maxAttempts: 3, backoffInitialMs: 10, backoffMaxMs: 10, timeoutMs: 1_000 } }),
      receiver: reject503,
    });
    await handle.result();
    const { started, handle: child } = await childOf(handle.workflowId);
    const err = await child.result().then(
      () => undefined,
      (e: unknown) => e as WorkflowFailedError,
    );
    expect((err?.cause as ApplicationFailure | undefined)?.type).toBe('WebhookGaveUp');
    expect(triesOf(handle.workflowId)).toHaveLength(3);
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    const view = webhookFromHistory(started, await child.fetchHistory(), defaultPayloadConverter);
    expect(view).toMatchObject({ state: 'gave-up', attempts: 3, lastStatus: 503, lastError: 'WebhookRejected: answered 503' });
    // What `renders show` prints of it.
    const line = webhookLine(view);
    expect(line).toMatch(
      /^webhook: GAVE-UP video\.completed to https:\/\/hooks\.example\.com\/in \(webhook-id msg_[0-9a-f]{32}, 3 of 3 tries, last status 503\)/,
    );
    expect(line).toContain('last error: WebhookRejected: answered 503');
  });

  it('a refused target is not retried', async () => {
    const handle = await start({
      webhook: target(),
      receiver: async () => {
        throw ApplicationFailure.create({ type: 'WebhookRefused', message: 'hooks.example.com resolves to 10.0.0.1', nonRetryable: true });
      },
    });
    await handle.result();
    const { handle: child } = await childOf(handle.workflowId);
    await expect(child.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(triesOf(handle.workflowId)).toHaveLength(1);
  });

  it('the patch marker is in a render with a webhook; a render without one schedules no child and records no webhook marker', async () => {
    const withHook = await start({ webhook: target() });
    await withHook.result();
    const { renderHistory } = await childOf(withHook.workflowId);
    const webhookMarker = Buffer.from(JSON.stringify(WEBHOOK_PATCH)).toString('base64');
    const patchMarkers = (events: typeof renderHistory.events): string[] =>
      (events ?? []).flatMap((e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_patch' ? [JSON.stringify(e.markerRecordedEventAttributes.details)] : [],
      );
    // Every render records the outcome patch's marker (render.ts OUTCOME_PATCH); one with a webhook the webhook's too.
    expect(patchMarkers(renderHistory.events).filter((d) => d.includes(webhookMarker))).toHaveLength(1);

    const plain = await start({});
    await plain.result();
    const events = (await plain.fetchHistory()).events ?? [];
    expect(events.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toEqual([]);
    expect(patchMarkers(events).filter((d) => d.includes(webhookMarker))).toEqual([]);
  });
});
