/**
 * The jobs API view (`comfy_execution/jobs.py`): one normalised dict per queued, running or finished prompt,
 * with the status mapping clients rely on (`error` + `execution_interrupted` → `cancelled`).
 */
import type { HistoryItem, QueueItem } from './queue.ts';

export type JobStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | 'cancelled';
export const JOB_STATUSES: readonly JobStatus[] = ['pending', 'in_progress', 'completed', 'failed', 'cancelled'];

export type Job = Record<string, unknown> & { id: string; status: JobStatus };

function prune<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as T;
}

function workflowId(extraData: Record<string, unknown>): unknown {
  const pnginfo = extraData.extra_pnginfo as { workflow?: { id?: unknown } } | undefined;
  return pnginfo && typeof pnginfo === 'object' ? pnginfo.workflow?.id : undefined;
}

export function queueJob(item: QueueItem, status: 'pending' | 'in_progress'): Job {
  return prune({
    id: item.promptId,
    status,
    priority: item.number,
    create_time: item.extraData.create_time,
    outputs_count: 0,
    previewable_outputs_count: 0,
    workflow_id: workflowId(item.extraData),
  });
}

const PREVIEWABLE = /\.(png|jpe?g|webp|gif|bmp|mp4|webm|mov|mkv|wav|mp3|flac|ogg)$/i;

function outputsSummary(outputs: HistoryItem['outputs']): { count: number; previewable: number; preview?: Record<string, unknown> } {
  let count = 0;
  let previewable = 0;
  let preview: Record<string, unknown> | undefined;
  let fallback: Record<string, unknown> | undefined;
  for (const [nodeId, ui] of Object.entries(outputs)) {
    for (const [mediaType, items] of Object.entries(ui)) {
      if (mediaType === 'animated' || !Array.isArray(items)) continue;
      for (const it of items) {
        if (!it || typeof it !== 'object') continue;
        count++;
        const f = it as { filename?: unknown; type?: unknown };
        if (typeof f.filename !== 'string' || !PREVIEWABLE.test(f.filename)) continue;
        previewable++;
        const enriched = { ...(it as Record<string, unknown>), nodeId, mediaType };
        if (!preview && f.type === 'output') preview = enriched;
        else if (!fallback) fallback = enriched;
      }
    }
  }
  const chosen = preview ?? fallback;
  return chosen ? { count, previewable, preview: chosen } : { count, previewable };
}

export function historyJob(promptId: string, h: HistoryItem, includeOutputs: boolean): Job {
  const [priority, , prompt, extraData] = h.prompt;
  let start: unknown;
  let end: unknown;
  let executionError: unknown;
  let interrupted = false;
  for (const [event, data] of h.status.messages) {
    if (event === 'execution_start') start = data.timestamp;
    else if (event === 'execution_success' || event === 'execution_error' || event === 'execution_interrupted') {
      end = data.timestamp;
      if (event === 'execution_error') executionError = data;
      if (event === 'execution_interrupted') interrupted = true;
    }
  }
  const status: JobStatus = h.status.status_str === 'success' ? 'completed' : interrupted ? 'cancelled' : 'failed';
  const summary = outputsSummary(h.outputs);
  const job = prune({
    id: promptId,
    status,
    priority,
    create_time: extraData.create_time,
    execution_start_time: start,
    execution_end_time: end,
    execution_error: executionError,
    outputs_count: summary.count,
    previewable_outputs_count: summary.previewable,
    preview_output: summary.preview,
    workflow_id: workflowId(extraData),
  }) as Job;
  if (includeOutputs) {
    job.outputs = structuredClone(h.outputs);
    job.execution_status = structuredClone(h.status);
    job.workflow = { prompt: structuredClone(prompt), extra_data: structuredClone(extraData) };
  }
  return job;
}
