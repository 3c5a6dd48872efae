/**
 * Live progress for `/sdapi/v1/progress`, from Temporal rather than from this process: any front sees
 * renders started by any other, and a restarted front still sees the one on the GPU.
 *
 * - job_count: running render workflows on the task queue (each is running on a GPU or waiting for a
 *   slot), from visibility. Visibility is eventually consistent, so the oldest few (the one on the GPU is
 *   among them) are re-checked with `describe()` (strongly consistent), and renders this front has just
 *   started are counted even before they become visible.
 * - the current render: the one whose `runPrompt` is started, with its live heartbeat
 *   (`PromptHeartbeat` {node, value, max}) from `describe().raw.pendingActivities`, and its item / items
 *   from the workflow's `status` query.
 *
 * Clients poll about once a second; one answer is cached briefly and concurrent polls share it.
 */
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
// @temporalio/proto is CommonJS: its namespace is only reachable through the default export under ESM.
import proto from '@temporalio/proto';
import type { google } from '@temporalio/proto';
import type { PromptHeartbeat } from '../contracts/activities.ts';
import type { Logger } from '../log.ts';
import { renderStatusQuery, type RenderStatus } from '../contracts/workflows.ts';
import { decodeFirst } from '../operators/failure.ts';
import { itemFraction, ProgressMemory, progressMemory, renderFraction } from './render-progress.ts';

const { temporal } = proto;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

export interface CurrentRender {
  renderId: string;
  /** Output item being rendered (0-based) and the number of items. */
  item: number;
  items: number;
  /** Sampler step and steps of the current prompt (0 when not known yet). */
  value: number;
  max: number;
  node?: string;
  promptId?: string;
  /** (item + value / max) / items, in 0..1. */
  progress: number;
  /** Seconds left, extrapolated from the current item's pace (0 until the first step). */
  etaSeconds: number;
  /** When the current item's prompt started (ms since the epoch). */
  itemStartedAt?: number;
  /** The item's stage on the GPU (text encoding, sampling, decoding, saving), when the attempt reports it. */
  phase?: PromptHeartbeat['phase'];
  /** The workflow's stage (waiting, done), when its status query answered. */
  stage?: RenderStatus['stage'];
}

export interface ProgressSnapshot {
  /** Running + waiting renders. */
  jobCount: number;
  /** Output images of those renders (batch_size × n_iter each, from their memo); at least jobCount. */
  imageCount?: number;
  current?: CurrentRender;
  /**
   * With nothing on a GPU: what the oldest render does instead — `stopping` after an interrupt (its prompt is
   * being stopped), `starting` its next item (handed to a GPU just now: after a skip, between items),
   * `waiting` for a GPU (longer than that), or an earlier stage. Absent when its status query did not answer.
   */
  pending?: 'stopping' | 'starting' | RenderStatus['stage'];
  /** That render's progress while nothing of it is on a GPU: its finished items, or what was shown before. */
  pendingProgress?: number;
  /** Its next item (1-based) and items, when it is being handed to a GPU. */
  pendingItem?: { item: number; items: number };
}

export interface LiveProgressOptions {
  client: Client;
  namespace: string;
  taskQueue: string;
  logger?: Logger;
  cacheMs?: number;
  /** How many running renders to describe per refresh (the one on the GPU is among the oldest). */
  maxDescribe?: number;
  now?: () => number;
  /** What this front has shown per render (default: the process's, shared with the video routes). */
  memory?: ProgressMemory;
}

const QUERY_TIMEOUT_MS = 2_000;
/** How long a returned render is left out of the running list (visibility lags by well under this). */
const FINISHED_MEMORY_MS = 60_000;
/** Beyond this many running renders, count them instead of listing them all. */
const MAX_LISTED = 1_000;

const tsMs = (ts: google.protobuf.ITimestamp | null | undefined): number | undefined =>
  ts?.seconds === null || ts?.seconds === undefined ? undefined : Number(ts.seconds.toString()) * 1_000 + Math.floor((ts.nanos ?? 0) / 1e6);

export class LiveProgress {
  private cached: { at: number; generation: number; value: Promise<ProgressSnapshot> } | undefined;
  /** Renders this front saw return, until visibility catches up: progress is idle the moment they returned. */
  private readonly finishedAt = new Map<string, number>();
  private generation = 0;
  private readonly opts: Required<Omit<LiveProgressOptions, 'logger'>> & { logger?: Logger };
  private readonly memory: ProgressMemory;
  private readonly queryable: boolean;

  constructor(opts: LiveProgressOptions) {
    this.opts = { cacheMs: 500, maxDescribe: 10, now: Date.now, memory: progressMemory, ...opts };
    this.memory = this.opts.memory;
    // The name is quoted into a visibility query, which has no parameter binding.
    this.queryable = /^[A-Za-z0-9._:/@+-]{1,200}$/.test(opts.taskQueue);
    if (!this.queryable) opts.logger?.warn({ taskQueue: opts.taskQueue }, 'progress: task queue name cannot be queried; counting only this front’s renders');
  }

  get runningQuery(): string {
    return `WorkflowType = 'render' AND TaskQueue = '${this.opts.taskQueue}' AND ExecutionStatus = 'Running'`;
  }

  /** `justStarted`: ids of renders this front started that visibility may not show yet. */
  snapshot(justStarted: string[] = []): Promise<ProgressSnapshot> {
    if (!this.queryable) return Promise.resolve({ jobCount: justStarted.length });
    const now = this.opts.now();
    if (this.cached && this.cached.generation === this.generation && now - this.cached.at < this.opts.cacheMs) return this.cached.value;
    const value = this.compute(justStarted.filter((id) => !this.finishedAt.has(id)));
    this.cached = { at: now, generation: this.generation, value };
    // A failed refresh must not be served from the cache.
    value.catch(() => {
      if (this.cached?.value === value) this.cached = undefined;
    });
    return value;
  }

  /** A render returned to its client: drop the cached answer and leave it out from now on. */
  finished(renderId: string): void {
    const now = this.opts.now();
    for (const [id, at] of this.finishedAt) if (now - at > FINISHED_MEMORY_MS) this.finishedAt.delete(id);
    this.finishedAt.set(renderId, now);
    this.generation++;
    this.cached = undefined;
  }

  // eslint-disable-next-line max-lines-per-function -- one snapshot of every live render read in one pass; its steps share the lists being built (merged from issue 24's branch at 81 lines)
  private async compute(justStarted: string[]): Promise<ProgressSnapshot> {
    const { client, namespace } = this.opts;
    // All running renders (ids and start times; cheap), because visibility lists newest first while the
    // render on the GPU is among the oldest.
    const listed: { id: string; startedAt: number }[] = [];
    let token: Uint8Array | null | undefined;
    do {
      const page = await client.workflowService.listWorkflowExecutions({ namespace, query: this.runningQuery, pageSize: 100, nextPageToken: token ?? null });
      for (const e of page.executions ?? []) {
        const id = e.execution?.workflowId;
        if (id && !this.finishedAt.has(id)) listed.push({ id, startedAt: tsMs(e.startTime) ?? 0 });
      }
      token = page.nextPageToken;
    } while (token && token.length > 0 && listed.length < MAX_LISTED);
    const total = token && token.length > 0 ? (await client.workflow.count(this.runningQuery)).count : listed.length;
    if (total === 0 && justStarted.length === 0) return { jobCount: 0 };

    const oldest = listed
      .sort((a, b) => a.startedAt - b.startedAt)
      .slice(0, this.opts.maxDescribe)
      .map((r) => r.id);
    const ids = [...new Set([...oldest, ...justStarted])];
    const described = (
      await Promise.all(
        ids.map((id) =>
          client.workflow
            .getHandle(id)
            .describe()
            .catch(() => undefined),
        ),
      )
    ).filter((d): d is WorkflowExecutionDescription => d !== undefined);
    const running = described.filter((d) => d.status.name === 'RUNNING' && !this.finishedAt.has(d.workflowId));
    // Listed as running but already closed: visibility has not caught up with them yet.
    const stale = oldest.filter((id) => !running.some((d) => d.workflowId === id)).length;
    const jobCount = Math.max(total - stale, running.length);
    if (jobCount === 0) return { jobCount: 0 };
    // A1111 counts images (batch_size × n_iter), not requests: described renders by their memo, the rest as one.
    const imagesOf = (d: WorkflowExecutionDescription): number => (typeof d.memo?.images === 'number' && d.memo.images > 0 ? d.memo.images : 1);
    const imageCount = running.reduce((n, d) => n + imagesOf(d), 0) + Math.max(0, jobCount - running.length);

    const converter = client.options.loadedDataConverter.payloadConverter;
    // A started attempt still waiting in its worker for a ComfyUI (the dispatch lookahead) is not on a GPU yet.
    const onAGpu = (a: NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number]): boolean =>
      (decodeFirst(converter, a.heartbeatDetails) as Partial<PromptHeartbeat> | undefined)?.queued !== true;
    const onGpu = running
      .map((d) => ({ d, activity: d.raw.pendingActivities?.find((a) => a.activityType?.name === 'runPrompt' && a.state === STARTED && onAGpu(a)) }))
      .filter((x) => x.activity !== undefined)
      .sort((a, b) => a.d.startTime.getTime() - b.d.startTime.getTime())[0];
    if (!onGpu) {
      // Nothing on a GPU: say what the oldest render does, so "waiting" is said only when it waits.
      const oldestRunning = [...running].sort((a, b) => a.startTime.getTime() - b.startTime.getTime())[0];
      const st = oldestRunning ? await this.status(oldestRunning.workflowId) : undefined;
      // Its items done so far keep the fraction where it was between items and after the last one.
      if (!st || typeof st.stage !== 'string') return { jobCount, imageCount };
      const done = Array.isArray(st.promptIds) && st.items > 0 ? Math.min(1, st.promptIds.length / st.items) : 0;
      // Never below what was shown while its item ran: an interrupt or a skip winds the prompt down first.
      const pendingProgress = this.memory.raise(oldestRunning!.workflowId, done);
      return {
        jobCount,
        imageCount,
        pending: st.interrupted ? 'stopping' : handingOver(oldestRunning!, st, this.opts.now()) ? 'starting' : st.stage,
        pendingProgress,
        pendingItem: { item: Math.min(st.items, st.item + 1), items: st.items },
      };
    }

    const beat = (decodeFirst(converter, onGpu.activity!.heartbeatDetails) ?? {}) as Partial<PromptHeartbeat>;
    const status = await this.status(onGpu.d.workflowId);
    const memoImages = typeof onGpu.d.memo?.images === 'number' ? onGpu.d.memo.images : 1;
    // The heartbeat says where its item sits (render-progress.ts); older workers' do not, the status query does.
    const items = Math.max(1, typeof beat.items === 'number' ? beat.items : (status?.items ?? memoImages));
    const item = Math.min(items - 1, Math.max(0, typeof beat.item === 'number' ? beat.item : (status?.item ?? 0)));
    const value = typeof beat.value === 'number' && beat.value >= 0 ? beat.value : 0;
    const max = typeof beat.max === 'number' && beat.max > 0 ? beat.max : 0;
    // The attempt's own rising fraction (text encoding, sampling, then decode and save as stages of their own);
    // a decode's 0/1 bar would otherwise take the item back to 0.
    const fraction = itemFraction(beat);
    const progress = this.memory.raise(onGpu.d.workflowId, renderFraction(item, items, fraction));
    const itemStartedAt = tsMs(onGpu.activity!.lastStartedTime);
    let etaSeconds = 0;
    if (fraction > 0 && itemStartedAt !== undefined) {
      // Pace from the heartbeat's own time, so a heartbeat that is a few seconds old (they are throttled)
      // does not stretch the estimate while it waits for the next one.
      const beatAt = typeof beat.lastEventAt === 'number' && beat.lastEventAt > itemStartedAt ? beat.lastEventAt : this.opts.now();
      const perItemMs = (beatAt - itemStartedAt) / fraction;
      const finishAt = itemStartedAt + perItemMs * (items - item);
      etaSeconds = Math.max(0, (finishAt - this.opts.now()) / 1_000);
    }
    const current: CurrentRender = { renderId: onGpu.d.workflowId, item, items, value, max, progress, etaSeconds };
    if (beat.node) current.node = beat.node;
    if (beat.phase) current.phase = beat.phase;
    if (beat.promptId) current.promptId = beat.promptId;
    if (itemStartedAt !== undefined) current.itemStartedAt = itemStartedAt;
    if (status?.stage) current.stage = status.stage;
    return { jobCount, imageCount: Math.max(imageCount, items), current };
  }

  private async status(renderId: string): Promise<RenderStatus | undefined> {
    try {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), QUERY_TIMEOUT_MS);
      });
      try {
        return await Promise.race([this.opts.client.workflow.getHandle(renderId).query(renderStatusQuery), timeout]);
      } finally {
        clearTimeout(timer);
      }
    } catch (err) {
      // No workflow worker to answer (or the render just ended): progress falls back to item 0.
      this.opts.logger?.debug({ renderId, err: (err as Error).message }, 'status query failed');
      return undefined;
    }
  }
}

/**
 * Nothing is on a GPU and this render's attempt was scheduled only just now: it is being handed to a GPU
 * (the next item after a skip, the next of a batch), not waiting for one. A GPU that takes longer than this
 * to pick it up is busy or gone: then it waits.
 */
const HANDOVER_MS = 5_000;
function handingOver(d: WorkflowExecutionDescription, st: RenderStatus, now: number): boolean {
  if (st.stage !== 'waiting') return false;
  const attempt = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'runPrompt');
  const scheduled = tsMs(attempt?.scheduledTime);
  return scheduled !== undefined && now - scheduled < HANDOVER_MS;
}
