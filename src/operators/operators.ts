/**
 * Operator actions on renders, shared by the CLI (`comfy-durable renders …`) and the HTTP routes
 * (`/renders…`): list with filters and paging, show a timeline, read outputs, replay one or every failed
 * render in a time window, cancel. Everything comes from Temporal (visibility, history, describe) and the
 * blob store: there is no other database to drift out of sync.
 */
import type { Client, WorkflowExecutionDescription, WorkflowExecutionInfo } from '@temporalio/client';
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers.js';
import { WorkflowNotFoundError } from '@temporalio/common';
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';
import { z } from 'zod';
import type { BlobStore } from '../blobs/store.ts';
import type { Logger } from '../log.ts';
import { outcomeOf } from '../contracts/outcome.ts';
import { isImageRender, type BlobRef, type RenderRequest, type RenderResult } from '../contracts/render.ts';
import type { RenderSubmitter } from '../renders/submit.ts';
import { RENDER_BACKEND, RENDER_KIND, RENDER_MODEL, RENDER_REPLAY_OF } from '../contracts/search-attributes.ts';
import { decodeFirst, failureClass, failureReason, failureView } from './failure.ts';
import { buildListQuery, decodeCursor, encodeCursor, type RenderFilters } from './query.ts';
import { buildTimeline, statusName } from './timeline.ts';
import { webhookFromHistory } from './webhook.ts';
import { DEFAULT_PRIORITY } from '../contracts/priority.ts';
import { canSee, EVERYONE, listOwnerFilter, ownerOf, type Viewer } from '../renders/owner.ts';
import type { BulkReplayItem, BulkReplayResult, RenderPage, RenderSummary, RenderTimeline, ReplayStarted } from './types.ts';

const { temporal } = proto;

export class RenderNotFoundError extends Error {
  override name = 'RenderNotFoundError';
  constructor(readonly renderId: string) {
    super(`render ${renderId} not found (renders are deleted after the retention period, or by \`renders prune\`)`);
  }
}

export class RenderNotRunningError extends Error {
  override name = 'RenderNotRunningError';
  constructor(
    readonly renderId: string,
    readonly status: string,
  ) {
    super(`render ${renderId} is not running (${status})`);
  }
}

export class OutputNotFoundError extends Error {
  override name = 'OutputNotFoundError';
}

export class NotReplayableError extends Error {
  override name = 'NotReplayableError';
}

export interface OperatorsOptions {
  client: Client;
  namespace: string;
  /** Needed for outputs only. */
  blobs?: BlobStore;
  logger?: Logger;
  /** Seed source for `--new-seed` (tests pass a fixed one). */
  random?: () => number;
  /** Starts replays, as every render starts (admission, graph build); needed for replays only. */
  submitter?: RenderSubmitter;
}

export interface ListOptions {
  pageSize?: number;
  cursor?: string;
  /** Add the failure reason / output count of closed renders (one small history read each). */
  withOutcome?: boolean;
  /** Whose renders are listed (src/renders/owner.ts); default every render. */
  viewer?: Viewer;
}

/** A1111's random seed range, as the front uses for `seed: -1`. */
const RANDOM_SEED_BOUND = 4294967294;
const OUTCOME_CONCURRENCY = 8;
const OUTPUT_CACHE_SIZE = 500;

/** The fields a replay depends on; the rest of the recorded request is passed through as recorded. */
const modelRequestSchema = z
  .object({
    kind: z.enum(['txt2img', 'img2img', 'edit']),
    model: z.string().min(1),
    prompt: z.string(),
    seed: z.number().int().nonnegative(),
    steps: z.number().int().positive(),
    width: z.number().int().positive(),
    height: z.number().int().positive(),
    batchSize: z.number().int().positive(),
    nIter: z.number().int().positive(),
    extraImages: z.array(z.unknown()),
  })
  .passthrough();
/** A client's own graph (ComfyUI's API, a workflow file): replayed as it was sent, its uploads included. */
const promptRequestSchema = z
  .object({
    kind: z.literal('prompt'),
    model: z.string().min(1),
    graph: z.object({ graph: z.record(z.string(), z.unknown()), inputs: z.array(z.unknown()) }).passthrough(),
  })
  .passthrough();
const replayableRequestSchema = z.union([modelRequestSchema, promptRequestSchema]);

/** The blobs a replay reads (image and prompt renders are the replayable ones): an image's init image, mask and references, a graph's uploads. */
function replayInputs(request: RenderRequest): BlobRef[] {
  if (isImageRender(request)) return [request.initImage, request.mask, ...request.extraImages].filter((r): r is BlobRef => r !== undefined);
  if (request.kind === 'prompt') return request.graph.inputs;
  return [];
}

export class RenderOperators {
  private readonly client: Client;
  private readonly namespace: string;
  private readonly blobs: BlobStore | undefined;
  private readonly logger: Logger | undefined;
  private readonly random: () => number;
  private readonly submitter: RenderSubmitter | undefined;
  /** Outputs of closed renders never change: thumbnails need not re-read history. */
  private readonly outputCache = new Map<string, { owner: string | undefined; outputs: BlobRef[] }>();

  constructor(opts: OperatorsOptions) {
    this.client = opts.client;
    this.namespace = opts.namespace;
    this.blobs = opts.blobs;
    this.logger = opts.logger;
    this.random = opts.random ?? Math.random;
    this.submitter = opts.submitter;
  }

  /** One page of renders, newest first (visibility order), with an opaque cursor for the next one. */
  async list(filters: RenderFilters, opts: ListOptions = {}): Promise<RenderPage & { query: string }> {
    // A client key's list is narrowed to its own renders, whatever owner the filters named.
    const owner = listOwnerFilter(opts.viewer ?? EVERYONE);
    const query = buildListQuery(owner === undefined ? filters : { ...filters, owner });
    const res = await this.client.workflowService.listWorkflowExecutions({
      namespace: this.namespace,
      query,
      pageSize: opts.pageSize ?? 50,
      nextPageToken: decodeCursor(opts.cursor) ?? null,
    });
    const infos = await Promise.all(
      (res.executions ?? []).map((raw) => executionInfoFromRaw(raw, this.client.options.loadedDataConverter, raw, this.namespace)),
    );
    const renders = infos.map(summaryOf);
    if (opts.withOutcome) await this.addOutcomes(renders);
    const nextCursor = encodeCursor(res.nextPageToken);
    return { renders, query, ...(nextCursor ? { nextCursor } : {}) };
  }

  /** Up to `limit` renders across pages. */
  async listAll(filters: RenderFilters, opts: { limit?: number; withOutcome?: boolean; viewer?: Viewer } = {}): Promise<RenderSummary[]> {
    const limit = opts.limit ?? 1_000;
    const out: RenderSummary[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.list(filters, {
        pageSize: Math.min(100, limit - out.length),
        cursor,
        withOutcome: opts.withOutcome ?? false,
        ...(opts.viewer ? { viewer: opts.viewer } : {}),
      });
      out.push(...page.renders);
      cursor = page.nextCursor;
    } while (cursor && out.length < limit);
    return out.slice(0, limit);
  }

  /** Every read and action below goes through describeRender's visibility check: another key's render is not found. */
  async show(renderId: string, viewer: Viewer = EVERYONE): Promise<RenderTimeline> {
    const handle = this.client.workflow.getHandle(renderId);
    const described = await this.describeRender(renderId, viewer);
    const history = await handle.fetchHistory();
    const status = statusName(described.status.name);
    const timeline = buildTimeline(renderId, history, this.client.options.loadedDataConverter.payloadConverter, {
      status,
      pendingActivities: described.raw.pendingActivities ?? null,
    });
    if (timeline.webhook) {
      const started = timeline.webhook;
      // The delivery outlives the render (an abandoned child): its own history says where it is.
      const delivery = await this.client.workflow
        .getHandle(started.workflowId)
        .fetchHistory()
        .catch((err: unknown) => {
          this.logger?.warn({ err, workflowId: started.workflowId }, 'could not read the webhook delivery');
          return undefined;
        });
      if (delivery) timeline.webhook = webhookFromHistory(started, delivery, this.client.options.loadedDataConverter.payloadConverter);
    }
    // Only a completed render's outputs are final: after a failure, the same Idempotency-Key may run the
    // workflow id again (ALLOW_DUPLICATE_FAILED_ONLY), and a cached empty list would hide the new images.
    if (timeline.status === 'completed') this.cacheOutputs(renderId, { owner: ownerOf(described), outputs: timeline.outputs });
    return timeline;
  }

  async outputs(renderId: string, viewer: Viewer = EVERYONE): Promise<BlobRef[]> {
    const cached = this.outputCache.get(renderId);
    if (cached && canSee(viewer, cached.owner)) return cached.outputs;
    return (await this.show(renderId, viewer)).outputs;
  }

  async output(renderId: string, n: number, viewer: Viewer = EVERYONE): Promise<{ ref: BlobRef; bytes: Buffer }> {
    if (!this.blobs) throw new Error('no blob store configured');
    const refs = await this.outputs(renderId, viewer);
    const ref = refs[n];
    if (!ref) throw new OutputNotFoundError(`render ${renderId} has no output ${n} (it has ${refs.length})`);
    return { ref, bytes: await this.blobs.get(ref.sha256) };
  }

  /**
   * A new render of the same resolved request (same seed, inputs, sizes, sampler), linked to the original
   * through `replayOf` (search attribute RenderReplayOf + memo). `newSeed` draws a fresh seed instead.
   */
  async replay(renderId: string, opts: { newSeed?: boolean; viewer?: Viewer } = {}): Promise<ReplayStarted> {
    if (!this.submitter) throw new Error('no render submitter configured: this RenderOperators cannot replay');
    const { request, taskQueue, owner } = await this.recordedRequest(renderId, opts.viewer ?? EVERYONE);
    await this.assertInputsKept(renderId, request);
    const seed = opts.newSeed ? Math.floor(this.random() * RANDOM_SEED_BOUND) : request.seed;
    const next: RenderRequest = { ...request, seed, replayOf: renderId };
    // The original's task queue: its workers are the ones configured for its backends.
    // The replay belongs to the original's owner (an operator's replay of a client's render is the client's).
    const started = await this.submitter.submit({ route: 'renders.replay', request: next, taskQueue, ...(owner !== undefined ? { owner } : {}) });
    this.logger?.info({ renderId: started.renderId, replayOf: renderId, seed, newSeed: opts.newSeed ?? false }, 'replay started');
    return { originalId: renderId, renderId: started.renderId, seed, newSeed: opts.newSeed ?? false };
  }

  /**
   * Every failed render whose start time is in [since, until] (optionally one model), oldest first. Renders
   * that already have a replay are skipped unless `includeReplayed`, so running the same incident window
   * twice does not render everything twice.
   */
  async replayFailed(opts: {
    since: string;
    until?: string;
    model?: string;
    dryRun?: boolean;
    includeReplayed?: boolean;
    taskQueue?: string;
    /** Only the renders of this API key (the CLI's --owner). */
    owner?: string;
  }): Promise<BulkReplayResult> {
    const filters: RenderFilters = { status: 'failed', since: opts.since, until: opts.until ?? 'now' };
    if (opts.model) filters.model = opts.model;
    if (opts.owner) filters.owner = opts.owner;
    if (opts.taskQueue) filters.taskQueue = opts.taskQueue;
    const query = buildListQuery(filters);
    const failed = await this.listAll(filters, { limit: 10_000, withOutcome: true });
    failed.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    const items: BulkReplayItem[] = [];
    for (const r of failed) {
      const item: BulkReplayItem = { originalId: r.id, startedAt: r.startedAt };
      if (r.model) item.model = r.model;
      if (r.reason) item.reason = r.reason;
      if (!opts.includeReplayed) {
        const earlier = await this.list({ replayOf: r.id }, { pageSize: 1 });
        if (earlier.renders[0]) item.skipped = `already replayed as ${earlier.renders[0].id}`;
      }
      if (!item.skipped && !opts.dryRun) item.renderId = (await this.replay(r.id)).renderId;
      items.push(item);
    }
    return { dryRun: opts.dryRun ?? false, query, items };
  }

  async cancel(renderId: string, viewer: Viewer = EVERYONE): Promise<{ renderId: string; status: 'cancel-requested' }> {
    const described = await this.describeRender(renderId, viewer);
    if (described.status.name !== 'RUNNING') throw new RenderNotRunningError(renderId, statusName(described.status.name));
    await this.client.workflow.getHandle(renderId).cancel();
    this.logger?.info({ renderId }, 'cancel requested');
    return { renderId, status: 'cancel-requested' };
  }

  /** A replay needs the original's input images: after `renders prune` they may be gone. */
  private async assertInputsKept(renderId: string, request: RenderRequest): Promise<void> {
    if (!this.blobs) return;
    for (const ref of replayInputs(request)) {
      if (!(await this.blobs.has(ref.sha256))) {
        throw new NotReplayableError(
          `render ${renderId} cannot be replayed: its input image ${ref.sha256.slice(0, 12)}… was pruned from the blob store (retention, \`renders prune\`)`,
        );
      }
    }
  }

  /** The request exactly as the workflow received it (first history event), and the queue it ran on. */
  async recordedRequest(renderId: string, viewer: Viewer = EVERYONE): Promise<{ request: RenderRequest; taskQueue: string; owner?: string }> {
    const described = await this.describeRender(renderId, viewer);
    const owner = ownerOf(described);
    const history = await this.client.workflow.getHandle(renderId).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const input = decodeFirst(this.client.options.loadedDataConverter.payloadConverter, started?.input);
    const parsed = replayableRequestSchema.safeParse(input);
    if (!parsed.success) {
      throw new NotReplayableError(`render ${renderId} has no replayable request in its history: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    }
    return {
      request: parsed.data as unknown as RenderRequest,
      taskQueue: started?.taskQueue?.name ?? described.taskQueue,
      ...(owner !== undefined ? { owner } : {}),
    };
  }

  private async describeRender(renderId: string, viewer: Viewer = EVERYONE): Promise<WorkflowExecutionDescription> {
    try {
      const d = await this.client.workflow.getHandle(renderId).describe();
      // Another key's render is not found, exactly as a render that does not exist: its id says nothing.
      if (d.type !== 'render' || !canSee(viewer, ownerOf(d))) throw new RenderNotFoundError(renderId);
      return d;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new RenderNotFoundError(renderId);
      throw err;
    }
  }

  private cacheOutputs(renderId: string, outputs: { owner: string | undefined; outputs: BlobRef[] }): void {
    if (this.outputCache.size >= OUTPUT_CACHE_SIZE) {
      const oldest = this.outputCache.keys().next().value;
      if (oldest !== undefined) this.outputCache.delete(oldest);
    }
    this.outputCache.set(renderId, outputs);
  }

  /** Reads only the close event of each closed render: the failure reason, or the outputs and what happened. */
  private async addOutcomes(renders: RenderSummary[]): Promise<void> {
    for (const r of renders) if (r.status === 'cancelled') Object.assign(r, { outcome: 'cancelled', outcomeSummary: 'cancelled' });
    const closed = renders.filter((r) => r.status !== 'running' && r.status !== 'cancelled');
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < closed.length) {
        const r = closed[next++]!;
        try {
          await this.addOutcome(r);
        } catch (err) {
          this.logger?.warn({ renderId: r.id, err: (err as Error).message }, 'could not read the outcome of a render');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(OUTCOME_CONCURRENCY, closed.length) }, worker));
  }

  private async addOutcome(r: RenderSummary): Promise<void> {
    const converter = this.client.options.loadedDataConverter.payloadConverter;
    const res = await this.client.workflowService.getWorkflowExecutionHistory({
      namespace: this.namespace,
      execution: { workflowId: r.id, runId: r.runId },
      historyEventFilterType: temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
    });
    const ev = res.history?.events?.[0];
    if (!ev) return;
    if (ev.workflowExecutionCompletedEventAttributes) {
      const result = decodeFirst(converter, ev.workflowExecutionCompletedEventAttributes.result) as Partial<RenderResult> | undefined;
      const outputs = Array.isArray(result?.outputs) ? result.outputs : [];
      r.outputs = outputs.length;
      const o = outcomeOf({ ...result, outputs });
      r.outcome = o.outcome;
      r.outcomeSummary = o.summary;
      this.cacheOutputs(r.id, { owner: r.owner, outputs });
    } else if (ev.workflowExecutionFailedEventAttributes) {
      const f = failureView(converter, ev.workflowExecutionFailedEventAttributes.failure);
      r.outcome = 'failed';
      if (f) {
        r.reason = failureReason(f);
        r.failureClass = failureClass(f);
        r.outcomeSummary = `failed: ${r.failureClass}`;
      }
    } else if (ev.workflowExecutionTimedOutEventAttributes) {
      r.reason = 'Timeout: the render exceeded its workflow timeout';
      Object.assign(r, { outcome: 'timed-out', failureClass: 'Timeout', outcomeSummary: 'timed-out: workflow timeout' });
    } else if (ev.workflowExecutionTerminatedEventAttributes) {
      const a = ev.workflowExecutionTerminatedEventAttributes;
      r.reason = `Terminated${a.identity ? ` by ${a.identity}` : ''}${a.reason ? `: ${a.reason}` : ''}`;
      Object.assign(r, { outcome: 'terminated', failureClass: 'Terminated', outcomeSummary: `terminated: ${r.reason}` });
    }
  }
}

function summaryOf(info: WorkflowExecutionInfo): RenderSummary {
  const memo = info.memo ?? {};
  const sa = info.typedSearchAttributes;
  const s: RenderSummary = {
    id: info.workflowId,
    runId: info.runId,
    status: statusName(info.status.name),
    taskQueue: info.taskQueue,
    startedAt: info.startTime.toISOString(),
  };
  const set = <K extends keyof RenderSummary>(k: K, v: RenderSummary[K] | undefined): void => {
    if (v !== undefined && v !== null && v !== '') s[k] = v;
  };
  set('model', sa.get(RENDER_MODEL));
  set('kind', sa.get(RENDER_KIND));
  set('backend', sa.get(RENDER_BACKEND));
  set('replayOf', sa.get(RENDER_REPLAY_OF) ?? (typeof memo.replayOf === 'string' ? memo.replayOf : undefined));
  set('owner', ownerOf(info));
  if (info.closeTime) {
    s.closedAt = info.closeTime.toISOString();
    s.durationMs = info.closeTime.getTime() - info.startTime.getTime();
  }
  set('prompt', typeof memo.prompt === 'string' ? memo.prompt : undefined);
  set('size', typeof memo.size === 'string' ? memo.size : undefined);
  set('steps', typeof memo.steps === 'number' ? memo.steps : undefined);
  set('seed', typeof memo.seed === 'number' ? memo.seed : undefined);
  set('images', typeof memo.images === 'number' ? memo.images : undefined);
  set('priority', typeof memo.priority === 'number' ? memo.priority : DEFAULT_PRIORITY);
  return s;
}
