/**
 * Replay determinism: workflow histories recorded from real runs (test/histories/*.json, made by
 * `npx tsx test/histories/record.ts`) must replay against the current workflow code. A change to
 * src/workflows that would break renders already running — a new, removed or reordered activity, timer or
 * search-attribute upsert — fails here with a nondeterminism error. docs/versioning.md says what to do then:
 * the change goes behind a patch and the old histories stay next to the new ones (webhooks were the first:
 * `webhook-*.json` carry the `webhook-delivery` marker, the four older ones none).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { DefaultLogger, Runtime, Worker, type ReplayResult, type ReplayWorkerOptions } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTimeline } from '../../src/operators/timeline.ts';
import { WEBHOOK_PATCH } from '../../src/workflows/render.ts';
import { WORKFLOWS_PATH, workflowInterceptorModules } from '../../src/worker/worker.ts';
import { workerTracing } from '../../src/tracing/temporal.ts';
import { renderOutcomeSinks } from '../../src/metrics/render-sinks.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = path.join(root, 'test', 'histories');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();
const SCENARIOS = ['cancel.json', 'failure.json', 'stall-retry.json', 'success.json'];

// The replayer logs every workflow task it fails on purpose (the mutant below): keep the output readable.
Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });

const load = (f: string): ReturnType<typeof historyFromJSON> => historyFromJSON(JSON.parse(readFileSync(path.join(dir, f), 'utf8')));

async function replayAll(workflowsPath: string, extra: Partial<ReplayWorkerOptions> = {}): Promise<Map<string, ReplayResult>> {
  const results = new Map<string, ReplayResult>();
  const fileOf = new Map<string, string>();
  const histories = files.map((f) => {
    const history = load(f);
    const workflowId = recordedRenderId(history) ?? f;
    fileOf.set(workflowId, f);
    return { workflowId, history };
  });
  // One bundle of the workflow code for all histories (bundling is the slow part).
  for await (const r of Worker.runReplayHistories({ workflowsPath, replayName: 'replay-test', ...extra }, histories)) results.set(fileOf.get(r.workflowId)!, r);
  return results;
}

/**
 * The id the render was recorded under, where its commands depend on it: a render with a webhook names its
 * child after itself (`webhook-<render id>-…`), so it must replay under its own id, as it would in production.
 */
function recordedRenderId(history: ReturnType<typeof load>): string | undefined {
  for (const e of history.events ?? []) {
    const child = e.startChildWorkflowExecutionInitiatedEventAttributes;
    if (child?.input?.payloads?.[0]) return defaultPayloadConverter.fromPayload<{ renderId?: string }>(child.input.payloads[0]).renderId;
  }
  return undefined;
}

const describeError = (r: ReplayResult | undefined): string | undefined => (r?.error ? `${r.error.name}: ${r.error.message}` : undefined);

describe('recorded render histories replay against the current workflow code', () => {
  let results: Map<string, ReplayResult>;

  beforeAll(async () => {
    results = await replayAll(WORKFLOWS_PATH);
  }, 60_000);

  it('renders recorded since the render-outcome-search-attribute patch carry its marker and their RenderOutcome; the older ones neither', () => {
    const upserted = (f: string): string[] =>
      (load(f).events ?? []).flatMap((e) => {
        const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {};
        const outcome = fields.RenderOutcome;
        return outcome ? [defaultPayloadConverter.fromPayload<string[]>(outcome).join(',')] : [];
      });
    const marked = (f: string): boolean => (load(f).events ?? []).some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    for (const s of ['success', 'stall-retry', 'failure']) expect(marked(`render-outcome-search-attribute-${s}.json`), s).toBe(true);
    expect(upserted('render-outcome-search-attribute-success.json')).toEqual(['completed']);
    expect(upserted('render-outcome-search-attribute-failure.json')).toEqual(['failed,failed:ComfyExecution']);
    // A cancelled render's status says it all: no outcome upsert (and so no marker).
    expect(upserted('render-outcome-search-attribute-cancel.json')).toEqual([]);
    for (const old of SCENARIOS) {
      expect(marked(old), old).toBe(false);
      expect(upserted(old), old).toEqual([]);
    }
  });

  it('has a history for each scenario of the one shape: success, retry after a stall, failure, cancel', () => {
    expect(files).toEqual(expect.arrayContaining(SCENARIOS));
    // The stall scenario really holds a retried prompt: a stalled attempt, then one that rendered.
    const run = buildTimeline('stall-retry', load('stall-retry.json'), defaultPayloadConverter).stages.find((s) => s.name === 'runPrompt[0]');
    expect(run?.attempts.map((a) => a.outcome)).toEqual(['failed', 'completed']);
    expect(run?.attempts[0]?.error?.type).toBe('ComfyStall');
  });

  it.each(SCENARIOS)('%s is the one shape: graphs and limits in the input, no patch or local-activity markers', (file) => {
    const events = load(file).events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    expect(started?.input?.payloads).toHaveLength(2);
    const built = defaultPayloadConverter.fromPayload<{ plan: { items: unknown[] }; limits: Record<string, number> }>(started!.input!.payloads![1]!);
    expect(built.plan.items).toHaveLength(1);
    expect(Object.keys(built.limits).sort()).toEqual([
      'backoffInitialMs',
      'backoffMaxMs',
      'deadlineMs',
      'heartbeatTimeoutMs',
      'maxAttempts',
      'minAttemptMs',
      'stallTimeoutMs',
    ]);
    expect(events.filter((e) => e.markerRecordedEventAttributes)).toEqual([]);
  });

  it.each(files)('%s', (file) => {
    expect(results.has(file), `${file} was not replayed`).toBe(true);
    // The error names the event where the code diverged from the history.
    expect(describeError(results.get(file))).toBeUndefined();
  });
});

describe('renders recorded since the patch webhook-delivery', () => {
  const WEBHOOK_SCENARIOS = [
    ['webhook-success.json', 'image.completed'],
    ['webhook-failure.json', 'image.failed'],
  ] as const;

  it.each(WEBHOOK_SCENARIOS)('%s records the patch marker and hands its %s event to a webhook child', (file, type) => {
    const events = load(file).events ?? [];
    const markers = events.flatMap((e) => (e.markerRecordedEventAttributes ? [e.markerRecordedEventAttributes] : []));
    expect(markers.map((m) => m.markerName)).toEqual(['core_patch']);
    expect(defaultPayloadConverter.fromPayload(markers[0]!.details!['patch-data']!.payloads![0]!)).toMatchObject({ id: WEBHOOK_PATCH });
    const child = events.flatMap((e) => (e.startChildWorkflowExecutionInitiatedEventAttributes ? [e.startChildWorkflowExecutionInitiatedEventAttributes] : []));
    expect(child.map((c) => c.workflowType?.name)).toEqual(['webhook']);
    const delivery = defaultPayloadConverter.fromPayload<{ webhookId: string; type: string; body: string }>(child[0]!.input!.payloads![0]!);
    expect(delivery.webhookId).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(delivery.type).toBe(type);
    expect(JSON.parse(delivery.body)).toMatchObject({ object: 'event', type, data: { render_id: expect.stringMatching(/^render-/) } });
    // Operators find the delivery through the render (its state then comes from the child's own history).
    expect(buildTimeline(file, load(file), defaultPayloadConverter).webhook).toMatchObject({
      workflowId: child[0]!.workflowId,
      webhookId: delivery.webhookId,
      type,
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/hook$/),
      state: 'pending',
    });
  });
});

describe('with tracing on, the recorded histories (made without it) replay too', () => {
  // A worker with OTEL_EXPORTER_OTLP_ENDPOINT set: the tracing workflow interceptors beside the outcome one, and
  // the span sink. Turning tracing on must not break renders already running.
  const exporter = new InMemorySpanExporter();
  const traced = workerTracing({ processor: new SimpleSpanProcessor(exporter), resource: Resource.default(), shutdown: async () => undefined });
  let results: Map<string, ReplayResult>;

  beforeAll(async () => {
    results = await replayAll(WORKFLOWS_PATH, {
      interceptors: { workflowModules: workflowInterceptorModules(traced) },
      sinks: { ...renderOutcomeSinks(), ...traced.sinks },
    });
  }, 90_000);

  it.each(files)('%s', (file) => {
    expect(results.has(file), `${file} was not replayed`).toBe(true);
    expect(describeError(results.get(file))).toBeUndefined();
  });

  it('exports no span while replaying (sinks are not called on replay)', () => {
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});

describe('the replay check can fail', () => {
  // A "deploy" of the current workflow that schedules one more activity first: exactly the kind of change
  // that breaks running renders. Built as a wrapper so it tracks the real workflow as it evolves.
  let mutantDir: string;
  let results: Map<string, ReplayResult>;

  beforeAll(async () => {
    mutantDir = mkdtempSync(path.join(os.tmpdir(), 'cd-replay-mutant-'));
    // Outside node_modules (the bundler only transpiles TypeScript there), yet resolving our dependencies.
    symlinkSync(path.join(root, 'node_modules'), path.join(mutantDir, 'node_modules'), 'dir');
    writeFileSync(
      path.join(mutantDir, 'index.ts'),
      [
        `import { proxyActivities } from '@temporalio/workflow';`,
        `import { render as current } from ${JSON.stringify(path.join(root, 'src', 'workflows', 'render.ts'))};`,
        `import type { RenderRequest } from ${JSON.stringify(path.join(root, 'src', 'contracts', 'render.ts'))};`,
        `const extra = proxyActivities<{ chooseBackend(input: { model: string }): Promise<unknown> }>({ startToCloseTimeout: '1 minute' });`,
        `import type { BuiltRender } from ${JSON.stringify(path.join(root, 'src', 'contracts', 'activities.ts'))};`,
        `export async function render(request: RenderRequest, built: BuiltRender) {`,
        `  await extra.chooseBackend({ model: request.model });`,
        `  return current(request, built);`,
        `}`,
      ].join('\n'),
    );
    results = await replayAll(path.join(mutantDir, 'index.ts'));
  }, 60_000);

  afterAll(() => {
    if (mutantDir) rmSync(mutantDir, { recursive: true, force: true });
  });

  it.each(files)('%s fails to replay against a workflow with an extra activity', (file) => {
    const r = results.get(file);
    expect(r?.error?.name).toBe('DeterminismViolationError');
    expect(r?.error?.message).toMatch(/TMPRL1100|[Nn]ondetermin/);
  });
});
