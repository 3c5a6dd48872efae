/**
 * ComfyUI's history, answered from Temporal: a `prompt` render's result (or failure) in the shape of a
 * ComfyUI history item, its outputs named for this service's `/view` (files.ts). A prompt id maps to its
 * render id by derivation (renderIdFor), so any front, a restarted one included, finds it. As ComfyUI does,
 * a prompt still queued or running has no history yet (`{}`).
 */
import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { BlobRef, RenderRequest, RenderResult } from '../../contracts/render.ts';
import { classifyFailure } from '../../renders/render-service.ts';
import { decodeFirst } from '../../operators/failure.ts';
import { fileNameOf } from './files.ts';

export { promptKey, renderIdForPrompt as renderIdFor } from '../../renders/prompt-request.ts';

export interface HistoryItem {
  prompt: [number, string, unknown, Record<string, unknown>, string[]];
  outputs: Record<string, Record<string, unknown[]>>;
  status: { status_str: 'success' | 'error'; completed: boolean; messages: [string, Record<string, unknown>][] };
  meta: Record<string, { node_id: string; display_node: string; parent_node: null; real_node_id: string }>;
}

/** ComfyUI's `outputs` of a result: each `{output: i}` becomes the file entry of blob i. */
export function historyOutputs(ui: RenderResult['ui'], refs: readonly BlobRef[]): Record<string, Record<string, unknown[]>> {
  const out: Record<string, Record<string, unknown[]>> = {};
  for (const [node, values] of Object.entries(ui ?? {})) {
    const mapped: Record<string, unknown[]> = {};
    for (const [key, list] of Object.entries(values)) {
      mapped[key] = list.map((v) => {
        const i = v && typeof v === 'object' ? (v as { output?: unknown }).output : undefined;
        const ref = typeof i === 'number' ? refs[i] : undefined;
        return ref ? { filename: fileNameOf(ref), subfolder: '', type: 'output' } : v;
      });
    }
    out[node] = mapped;
  }
  return out;
}

/** The failure as ComfyUI's `execution_error` / `execution_interrupted` message data. */
export interface FailureEvent {
  event: 'execution_error' | 'execution_interrupted';
  data: Record<string, unknown>;
}

export function failureEvent(promptId: string, err: unknown, renderId: string, at: number): FailureEvent {
  const f = classifyFailure(renderId, err);
  if (f.kind === 'Cancelled' || f.kind === 'Terminated') {
    return {
      event: 'execution_interrupted',
      data: { prompt_id: promptId, node_id: f.fields.node ?? null, node_type: f.fields.node_type ?? null, executed: [], timestamp: at },
    };
  }
  return {
    event: 'execution_error',
    data: {
      prompt_id: promptId,
      node_id: f.fields.node ?? null,
      node_type: f.fields.node_type ?? null,
      executed: [],
      exception_message: f.fields.comfy_message ?? f.message,
      exception_type: f.kind,
      traceback: [],
      current_inputs: {},
      current_outputs: [],
      timestamp: at,
    },
  };
}

function itemOf(request: RenderRequest, outputs: HistoryItem['outputs'], times: { start: number; end: number }, failure?: FailureEvent): HistoryItem {
  const spec = request.kind === 'prompt' ? request.graph : undefined;
  const promptId = spec?.promptId ?? '';
  const meta: HistoryItem['meta'] = {};
  for (const node of Object.keys(outputs)) meta[node] = { node_id: node, display_node: node, parent_node: null, real_node_id: node };
  const messages: HistoryItem['status']['messages'] = [
    ['execution_start', { prompt_id: promptId, timestamp: times.start }],
    ['execution_cached', { nodes: [], prompt_id: promptId, timestamp: times.start }],
    failure ? [failure.event, failure.data] : ['execution_success', { prompt_id: promptId, timestamp: times.end }],
  ];
  return {
    prompt: [spec?.number ?? 0, promptId, spec?.graph ?? {}, spec?.clientId ? { client_id: spec.clientId } : {}, Object.keys(outputs)],
    outputs,
    status: { status_str: failure ? 'error' : 'success', completed: !failure, messages },
    meta,
  };
}

const CACHE_SIZE = 2_000;

/** History items of closed prompt renders (they never change, so they are kept once built). */
export class PromptHistory {
  private readonly cache = new Map<string, HistoryItem>();

  constructor(private readonly client: Client) {}

  /** The item of a render, or undefined while it waits or runs (or when there is no such render). */
  async item(renderId: string): Promise<HistoryItem | undefined> {
    const hit = this.cache.get(renderId);
    if (hit) return hit;
    const handle = this.client.workflow.getHandle(renderId);
    let described;
    try {
      described = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
    if (described.status.name === 'RUNNING') return undefined;
    const times = { start: described.startTime.getTime(), end: (described.closeTime ?? new Date()).getTime() };
    let item: HistoryItem;
    try {
      const result = (await handle.result()) as RenderResult;
      if (result.request.kind !== 'prompt') return undefined;
      item = itemOf(result.request, historyOutputs(result.ui, result.outputs), times);
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      const request = await this.recordedRequest(renderId);
      if (request?.kind !== 'prompt') return undefined;
      item = itemOf(request, {}, times, failureEvent(request.graph?.promptId ?? '', err, renderId, times.end));
    }
    if (this.cache.size >= CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(renderId, item);
    return item;
  }

  /**
   * The newest `limit` prompt renders on this task queue (`ownerClause`: of one API key only), closed ones as
   * items, oldest first (ComfyUI's order).
   */
  async list(taskQueue: string, limit: number, ownerClause = ''): Promise<Record<string, HistoryItem>> {
    const ids: string[] = [];
    const query = `WorkflowType = 'render' AND RenderKind = 'prompt' AND TaskQueue = '${taskQueue}' AND ExecutionStatus != 'Running'${ownerClause}`;
    for await (const w of this.client.workflow.list({ query, pageSize: Math.min(limit, 1000) })) {
      ids.push(w.workflowId);
      if (ids.length >= limit) break;
    }
    const items = await mapBounded(ids.reverse(), 8, (id) => this.item(id).catch(() => undefined));
    const out: Record<string, HistoryItem> = {};
    for (const it of items) if (it) out[it.prompt[1]] = it;
    return out;
  }

  private async recordedRequest(renderId: string): Promise<RenderRequest | undefined> {
    const history = await this.client.workflow.getHandle(renderId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    return decodeFirst(this.client.options.loadedDataConverter.payloadConverter, started?.input) as RenderRequest | undefined;
  }
}

async function mapBounded<T, R>(items: readonly T[], concurrency: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}
