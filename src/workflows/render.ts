/**
 * The `render` workflow: deterministic orchestration only, every effect is an activity.
 * build graph → choose backend → upload inputs → run each prompt (submit + follow) → collect outputs.
 * Payloads are small JSON (graphs and blob references); image bytes never enter history.
 */
import {
  ApplicationFailure,
  defineQuery,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RenderActivities } from '../activities/types.ts';
import type { BlobRef, RenderRequest, RenderResult, StageTiming } from '../render/types.ts';
import { RENDER_BACKEND } from '../temporal/search-attributes.ts';
import { NON_RETRYABLE_TYPES } from './failure-types.ts';

export interface RenderStatus {
  stage: 'building' | 'choosing-backend' | 'uploading' | 'rendering' | 'collecting' | 'done';
  item: number;
  items: number;
  backend?: string;
  promptIds: string[];
}

export const renderStatusQuery = defineQuery<RenderStatus>('status');

const io = proxyActivities<RenderActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 8, nonRetryableErrorTypes: NON_RETRYABLE_TYPES },
});

export async function render(request: RenderRequest): Promise<RenderResult> {
  const renderId = workflowInfo().workflowId;
  const timings: StageTiming[] = [];
  const status: RenderStatus = { stage: 'building', item: 0, items: request.batchSize * request.nIter, promptIds: [] };
  setHandler(renderStatusQuery, () => status);

  const timed = async <T>(stage: string, fn: () => Promise<T>): Promise<T> => {
    const start = Date.now();
    try {
      return await fn();
    } finally {
      timings.push({ stage, ms: Date.now() - start });
    }
  };

  const { plan, limits } = await timed('buildGraph', () => io.buildGraph({ request, renderId }));

  status.stage = 'choosing-backend';
  const backend = await timed('chooseBackend', () => io.chooseBackend({ model: request.model }));
  status.backend = backend.id;
  upsertSearchAttributes([{ key: RENDER_BACKEND, value: backend.id }]);

  // Prompts run on the backend's own task queue, which has exactly one slot per ComfyUI: waiting happens
  // in Temporal's durable queue, never in ComfyUI's in-memory one.
  const gpu = proxyActivities<RenderActivities>({
    taskQueue: backend.taskQueue,
    startToCloseTimeout: limits.deadlineMs,
    scheduleToCloseTimeout: limits.deadlineMs,
    heartbeatTimeout: limits.heartbeatTimeoutMs,
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '30s',
      maximumAttempts: limits.maxAttempts,
      nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
    },
  });

  if (plan.uploads.length > 0) {
    status.stage = 'uploading';
    await timed('uploadInputs', () => io.uploadInputs({ backend, uploads: plan.uploads }));
  }

  const outputs: BlobRef[] = [];
  for (const item of plan.items) {
    status.stage = 'rendering';
    status.item = item.index;
    const run = await timed(`runPrompt[${item.index}]`, () =>
      gpu.runPrompt({ backend, renderId, item: item.index, graph: item.graph, stallTimeoutMs: limits.stallTimeoutMs }),
    );
    status.promptIds.push(run.promptId);
    status.stage = 'collecting';
    const refs = await timed(`collectOutputs[${item.index}]`, () =>
      io.collectOutputs({ backend, files: run.files, request, itemIndex: item.index }),
    );
    if (refs.length === 0) {
      throw ApplicationFailure.nonRetryable(`prompt ${run.promptId} produced no images`, 'NoOutputs');
    }
    outputs.push(...refs);
  }
  status.stage = 'done';

  return {
    renderId,
    outputs,
    seeds: plan.items.map((i) => i.seed),
    request,
    backend: backend.id,
    promptIds: status.promptIds,
    timings,
  };
}
