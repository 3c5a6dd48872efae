/**
 * History → timeline on the recorded histories (test/histories, real runs of the four scenarios), and on
 * small hand-made cases for what recordings cannot pin down (live pending activities, failure wording).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { msNumberToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { formatTimeline } from '../../src/cli/renders.ts';
import { failureReason } from '../../src/operators/failure.ts';
import { buildTimeline } from '../../src/operators/timeline.ts';
import type { FailureView } from '../../src/operators/types.ts';

// HISTORIES_DIR: check a fresh recording (record.ts with HISTORIES_DIR) before it replaces the kept one.
const dir = process.env.HISTORIES_DIR ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'histories');
const timeline = (name: string) =>
  buildTimeline(name, historyFromJSON(JSON.parse(readFileSync(path.join(dir, `${name}.json`), 'utf8'))), defaultPayloadConverter);
const names = (stages: { name: string }[]) => stages.map((s) => s.name);

describe('timeline of recorded histories', () => {
  it('success: the graph built before the start and one GPU attempt that stored the output; request, graph, prompt and output recorded', () => {
    const tl = timeline('success');
    expect(tl.status).toBe('completed');
    expect(names(tl.stages)).toEqual(['buildGraph', 'runPrompt[0]']);
    expect(tl.stages[0]).toMatchObject({ local: true, builtByFront: true, activityType: 'buildGraph', outcome: 'completed', durationMs: 0 });
    expect(tl.stages[0]!.scheduledAt).toBe(tl.startedAt);
    const attempt = tl.stages[1]!.attempts[0]!;
    expect(attempt.backend).toBe('comfyui-0');
    expect(attempt.steps?.map((s) => s.stage)).toEqual(['prompt', 'collectOutputs']);
    for (const s of tl.stages) {
      expect(s.outcome).toBe('completed');
      expect(s.attempts).toHaveLength(1);
      expect(s.attempts[0]).toMatchObject({ attempt: 1, outcome: 'completed' });
      expect(s.attempts[0]!.durationMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(s.attempts[0]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(tl.startedAt!));
    }
    expect(tl.request).toMatchObject({ prompt: 'a lighthouse at dusk', seed: 1, model: 'imagegen-flux-schnell', width: 128, height: 128 });
    expect(tl.model).toBe('imagegen-flux-schnell');
    expect(tl.kind).toBe('txt2img');
    expect(tl.backend).toBeDefined();
    expect(tl.memo).toMatchObject({ prompt: 'a lighthouse at dusk', seed: 1, size: '128x128' });
    expect(tl.graphs).toHaveLength(1);
    expect(tl.graphs[0]!.seed).toBe(1);
    expect(Object.values(tl.graphs[0]!.graph).map((n) => n.class_type)).toContain('KSampler');
    expect(tl.prompts).toEqual([expect.objectContaining({ item: 0, attempt: 1, outcome: 'completed', promptId: expect.stringMatching(/^[0-9a-f-]{36}$/) })]);
    expect(tl.outputs).toEqual([expect.objectContaining({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), mime: 'image/png', width: 128, height: 128 })]);
    expect(tl.reason).toBeUndefined();
    expect(tl.durationMs).toBe(Date.parse(tl.closedAt!) - Date.parse(tl.startedAt!));
  });

  it('stall then retry: runPrompt shows the stalled attempt with its error and prompt, then the one that rendered', () => {
    const tl = timeline('stall-retry');
    expect(tl.status).toBe('completed');
    expect(names(tl.stages)).toEqual(['buildGraph', 'runPrompt[0]']);
    const run = tl.stages[1]!;
    expect(run.outcome).toBe('completed');
    expect(run.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'completed'],
    ]);
    const [stalled, ok] = run.attempts;
    expect(stalled!.error).toMatchObject({ type: 'ComfyStall', message: expect.stringContaining('stalled') });
    expect(stalled!.promptId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ok!.promptId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ok!.promptId).not.toBe(stalled!.promptId);
    expect(tl.prompts.map((p) => [p.attempt, p.outcome])).toEqual([
      [1, 'failed'],
      [2, 'completed'],
    ]);
    expect(run.error).toBeUndefined();
    expect(tl.outputs).toHaveLength(1);
  });

  it('failure: the failed stage, its error with ComfyUI details, and the reason in one line', () => {
    const tl = timeline('failure');
    expect(tl.status).toBe('failed');
    expect(tl.reason).toBe('runPrompt: ComfyExecution: ComfyUI node sampler (KSampler) failed: RuntimeError: recorded failure');
    const run = tl.stages.find((s) => s.name === 'runPrompt[0]')!;
    expect(run.outcome).toBe('failed');
    expect(run.attempts).toHaveLength(1);
    expect(run.attempts[0]!.error).toMatchObject({
      type: 'ComfyExecution',
      nonRetryable: true,
      details: { nodeType: 'KSampler', exceptionMessage: expect.stringMatching(/^recorded failure\s*$/) },
    });
    expect(tl.prompts).toEqual([expect.objectContaining({ item: 0, outcome: 'failed' })]);
    expect(tl.outputs).toEqual([]);
    expect(tl.graphs).toHaveLength(1);
  });

  it('cancel: cancelled, when it was requested, and the stage that was running', () => {
    const tl = timeline('cancel');
    expect(tl.status).toBe('cancelled');
    expect(tl.reason).toBe('cancelled');
    expect(tl.cancelRequestedAt).toBeDefined();
    const run = tl.stages.find((s) => s.name === 'runPrompt[0]')!;
    expect(run.outcome).toBe('cancelled');
    expect(run.cancelRequested).toBe(true);
    expect(tl.outputs).toEqual([]);
  });

  it('the CLI rendering names the reason, each attempt and the graph nodes', () => {
    const text = formatTimeline(timeline('stall-retry'));
    expect(text).toMatch(/runPrompt\[0\]\s+completed/);
    expect(text).toMatch(/attempt 1\s+failed .*ComfyStall/);
    expect(text).toMatch(/attempt 2\s+completed/);
    expect(text).toMatch(/sampler\s+KSampler\s+(?:\S.*)?seed=2/);
    expect(formatTimeline(timeline('failure'))).toContain('REASON: runPrompt: ComfyExecution');
  });
});

describe('what happened, beyond the status', () => {
  /** The success history whose result says what a stopped or NaN render returns (the shape renders record). */
  function completedWith(change: (result: Record<string, any>) => void) {
    const history = historyFromJSON(JSON.parse(readFileSync(path.join(dir, 'success.json'), 'utf8')));
    const done = history.events!.find((e) => e.workflowExecutionCompletedEventAttributes)!.workflowExecutionCompletedEventAttributes!;
    const result = defaultPayloadConverter.fromPayload<Record<string, any>>(done.result!.payloads![0]!);
    change(result);
    done.result = { payloads: [defaultPayloadConverter.toPayload(result)] };
    return buildTimeline('render-x', history, defaultPayloadConverter);
  }

  it('a completed render that was interrupted is partial, its output marked with the step it reached', () => {
    const tl = completedWith((r) => Object.assign(r, { interrupted: true, partial: [{ item: 0, step: 2, steps: 4 }] }));
    expect(tl.status).toBe('completed');
    expect(tl.outcome).toMatchObject({ outcome: 'partial', interrupted: true, summary: 'partial: interrupted at step 2/4' });
    expect(tl.outputOutcomes).toEqual([{ index: 0, item: 0, outcome: 'partial', stoppedBy: 'interrupt', step: 2, steps: 4 }]);
    const text = formatTimeline(tl);
    expect(text).toMatch(/^render-x {2}COMPLETED \(PARTIAL\)/);
    expect(text).toContain('OUTCOME: partial: interrupted at step 2/4');
    expect(text).toMatch(/^ {2}0 {2}sha256 \S+ .* PARTIAL \(interrupted at step 2\/4\)$/m);
    expect(text).toMatch(/^ {2}item 0 .* completed \(interrupted at step 2\/4\)$/m);
    // GET /renders/{id}: the prompt itself says it was stopped (ComfyUI's history: execution_interrupted).
    expect(tl.prompts).toEqual([expect.objectContaining({ item: 0, outcome: 'completed', stopped: { by: 'interrupt', step: 2, steps: 4 } })]);
  });

  it('a skip before any preview: no partial output, but the prompt still says it was skipped', () => {
    const tl = completedWith((r) => Object.assign(r, { skipped: [0] }));
    expect(tl.prompts[0]!.stopped).toEqual({ by: 'skip' });
    expect(formatTimeline(tl)).toMatch(/^ {2}item 0 .* completed \(skipped\)$/m);
  });

  it('a skipped item and a black output', () => {
    const skipped = completedWith((r) => Object.assign(r, { skipped: [0], partial: [{ item: 0, step: 1, steps: 4 }] }));
    expect(skipped.outcome).toMatchObject({ outcome: 'partial', skipped: [0], summary: 'partial: item 0 skipped at step 1/4' });
    expect(skipped.outputOutcomes![0]).toMatchObject({ outcome: 'partial', stoppedBy: 'skip' });
    expect(skipped.prompts[0]!.stopped).toEqual({ by: 'skip', step: 1, steps: 4 });
    const black = completedWith((r) => (r.outputs[0].blank = 'black'));
    expect(black.outcome).toMatchObject({ outcome: 'blank', blank: [0], summary: 'blank: output 0 is black (NaN in the VAE)' });
    expect(black.outputOutcomes).toEqual([{ index: 0, item: 0, outcome: 'completed', blank: 'black' }]);
    expect(black.prompts[0]!.stopped).toBeUndefined();
    expect(formatTimeline(black)).toMatch(/BLANK \(black: NaN in the VAE\)$/m);
  });

  it('the recorded histories: completed, failed with its class, cancelled', () => {
    expect(timeline('success').outcome).toEqual({ outcome: 'completed', summary: 'completed: 1 output(s)' });
    expect(timeline('failure').outcome).toMatchObject({ outcome: 'failed', failureClass: 'ComfyExecution' });
    expect(timeline('cancel').outcome).toEqual({ outcome: 'cancelled', summary: 'cancelled' });
  });
});

describe('live state of a running render', () => {
  const { temporal } = proto;
  /** The success history cut right after runPrompt was scheduled: the render is on the GPU now. */
  function onTheGpu(opts: { temporalRetries: boolean }) {
    const events = historyFromJSON(JSON.parse(readFileSync(path.join(dir, 'success.json'), 'utf8'))).events!;
    const cut = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runPrompt');
    const scheduled = events[cut]!.activityTaskScheduledEventAttributes!;
    if (opts.temporalRetries) {
      // The shape where Temporal (not the workflow) retries runPrompt: no attempt number in the input.
      const input = defaultPayloadConverter.fromPayload<Record<string, unknown>>(scheduled.input!.payloads![0]!);
      delete input.attempt;
      scheduled.input = { payloads: [defaultPayloadConverter.toPayload(input)] };
    }
    return { events: events.slice(0, cut + 1), activityId: scheduled.activityId! };
  }
  const startedAt = Date.now() - 1_500;
  const pending = (activityId: string, attempt: number, lastFailure?: object) => ({
    activityId,
    activityType: { name: 'runPrompt' },
    state: temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
    attempt,
    lastStartedTime: msNumberToTs(startedAt),
    ...(lastFailure ? { lastFailure } : {}),
    heartbeatDetails: { payloads: [defaultPayloadConverter.toPayload({ backend: 'b', promptId: 'p-live', value: 3, max: 20, lastEventAt: startedAt })] },
  });

  it('shows the current attempt from describe(): running since, prompt id, heartbeat', () => {
    const { events, activityId } = onTheGpu({ temporalRetries: false });
    const tl = buildTimeline('r', { events }, defaultPayloadConverter, { status: 'running', pendingActivities: [pending(activityId, 1)] });
    expect(tl.status).toBe('running');
    const run = tl.stages.find((s) => s.activityType === 'runPrompt')!;
    expect(run.outcome).toBe('running');
    const current = run.attempts.at(-1)!;
    expect(current).toMatchObject({ outcome: 'running', promptId: 'p-live', startedAt: new Date(startedAt).toISOString() });
    expect(current.durationMs).toBeGreaterThanOrEqual(1_400);
    expect(run.heartbeat).toMatchObject({ value: 3, max: 20 });
    expect(tl.closedAt).toBeUndefined();
  });

  it('with Temporal retries, the previous attempt’s failure comes from describe() too', () => {
    const { events, activityId } = onTheGpu({ temporalRetries: true });
    const tl = buildTimeline('r', { events }, defaultPayloadConverter, {
      status: 'running',
      pendingActivities: [pending(activityId, 3, { message: 'stalled', applicationFailureInfo: { type: 'ComfyStall' } })],
    });
    const run = tl.stages.find((s) => s.activityType === 'runPrompt')!;
    expect(run.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'running'],
    ]);
    expect(run.attempts[0]!.note).toMatch(/only the last failure/);
    expect(run.attempts[1]!.error?.type).toBe('ComfyStall');
  });
});

describe('failure reason', () => {
  const app = (type: string, message: string, cause?: FailureView): FailureView => ({ type, message, ...(cause ? { cause } : {}) });
  it.each<[string, FailureView, string]>([
    [
      'activity error',
      { type: 'ActivityFailure', message: 'Activity task failed', activityType: 'runPrompt', cause: app('ComfyValidation', 'node 3: bad') },
      'runPrompt: ComfyValidation: node 3: bad',
    ],
    [
      'workflow gave up (its own message names the last attempt)',
      app('RenderAttemptsExhausted', 'item 0 did not render within 4 attempts; last attempt: ComfyStall: x', {
        type: 'ActivityFailure',
        message: 'Activity task failed',
        activityType: 'runPrompt',
        cause: app('ComfyStall', 'x'),
      }),
      'RenderAttemptsExhausted: item 0 did not render within 4 attempts; last attempt: ComfyStall: x',
    ],
    [
      'timeout',
      {
        type: 'ActivityFailure',
        message: 'Activity task timed out',
        activityType: 'runPrompt',
        cause: { type: 'Timeout', timeoutType: 'HEARTBEAT', message: 'activity Heartbeat timeout' },
      },
      'runPrompt: Timeout (heartbeat): activity Heartbeat timeout',
    ],
    ['workflow code error', app('NoOutputs', 'prompt p produced no images'), 'NoOutputs: prompt p produced no images'],
  ])('%s', (_name, view, reason) => {
    expect(failureReason(view)).toBe(reason);
  });
});
