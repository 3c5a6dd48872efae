/**
 * Video jobs are render workflows (`render-…`, search attribute RenderKind = video): the job object of
 * `GET /v1/videos/{id}` (vLLM-Omni's VideoResponse, docs/video-api.md) is read from Temporal, so
 * every front answers for every job and a restarted front loses nothing.
 * - status: a running workflow is `queued` until its GPU activity has started, then `in_progress`;
 *   completed → `completed`; failed / timed out / terminated → `failed` with `error {code, message}`;
 *   cancelled (DELETE) → deleted.
 * - progress: the render's progress as `/sdapi/v1/progress` reads it (src/progress/render-progress.ts:
 *   the GPU attempt's heartbeat — text encoding, sampling, the decode timed against its measured rate —
 *   never going back), in percent; `stage` names what the GPU does.
 * - warnings: what the front changed in the request (a size fitted to the grid, frames snapped), kept in the
 *   render's memo.
 */
import { canSee, EVERYONE, listOwnerFilter, ownerOf, type Viewer } from '../../renders/owner.ts';
import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { decodeFirst } from '../../operators/failure.ts';
import type { RenderResult } from '../../contracts/render.ts';
import { RENDER_MODEL } from '../../contracts/search-attributes.ts';
import type { RenderWorkflow } from '../../contracts/workflows.ts';
import { classifyFailure } from '../../renders/render-service.ts';
import { secondsLabel } from '../../models/video.ts';
import { progressAfterSampler } from '../../models/video-tasks.ts';
import type { PromptHeartbeat } from '../../contracts/activities.ts';
import { itemFraction, percent, type ProgressMemory, progressMemory, renderFraction } from '../../progress/render-progress.ts';
import { outcomeOf, type ResultOutcome } from '../../contracts/outcome.ts';

const { temporal } = proto;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

/** Activities that run on the workflow's own queue (bookkeeping): any other started activity is the GPU. */
const BOOKKEEPING = new Set(['stopPrompts']);

export type VideoStatus = 'queued' | 'in_progress' | 'completed' | 'failed';
export type VideoStage = NonNullable<PromptHeartbeat['phase']>;

export interface VideoJob {
  id: string;
  object: 'video';
  model: string;
  prompt: string;
  status: VideoStatus;
  progress: number;
  size: string | null;
  seconds: string;
  num_frames?: number;
  fps?: number;
  quality: 'default';
  created_at: number;
  completed_at: number | null;
  expires_at: null;
  remixed_from_video_id: null;
  error: { code: number; message: string; type?: string } | null;
  media_type: 'video/mp4';
  file_name: string | null;
  inference_time_s: number | null;
  /** While in progress: what the GPU does. */
  stage?: VideoStage;
  /** What the front changed in the request (size fitted to the grid, frames snapped). */
  warnings?: string[];
  /** Completed jobs: what happened (partial after an interrupt or a skip). */
  outcome?: ResultOutcome;
}

export class VideoNotFoundError extends Error {
  override name = 'VideoNotFoundError';
}

/** A job and, once completed, the render's result (its outputs are blob references). */
export interface JobView {
  job: VideoJob;
  result?: RenderResult;
  /** HTTP status of a failed job (its error.code). */
  failedStatus?: number;
  cancelled: boolean;
}

const secs = (d: Date | undefined): number | null => (d ? Math.floor(d.getTime() / 1000) : null);

function gpuProgress(
  d: WorkflowExecutionDescription,
  client: Client,
  model: string,
  memory: ProgressMemory,
): { started: boolean; progress: number; stage?: VideoStage } {
  const pending = d.raw.pendingActivities ?? [];
  const converter = client.options.loadedDataConverter.payloadConverter;
  // Nothing pending once the render has started: its GPU attempt has just returned (the workflow is about
  // to complete) or it waits between attempts; what was shown before stands. The very first workflow task
  // (history: started, task scheduled, task started) is the only moment before the first attempt is scheduled.
  if (pending.length === 0) {
    const shown = memory.get(d.workflowId);
    return d.historyLength > 4 ? { started: true, progress: percent(shown ?? 0) } : { started: false, progress: 0 };
  }
  for (const a of pending) {
    const name = a.activityType?.name ?? '';
    if (BOOKKEEPING.has(name) || a.state !== STARTED) continue;
    const beat = (decodeFirst(converter, a.heartbeatDetails) ?? {}) as Partial<PromptHeartbeat>;
    // Older heartbeats carry no fraction: the model's family places the nodes after its sampler (90..99).
    const after = beat.fraction === undefined && typeof beat.node === 'string' ? progressAfterSampler(model, beat.node) : undefined;
    const fraction = itemFraction(beat, after !== undefined ? after / 100 : undefined);
    const item = typeof beat.item === 'number' ? beat.item : 0;
    const items = typeof beat.items === 'number' ? beat.items : 1;
    const progress = percent(memory.raise(d.workflowId, renderFraction(item, items, fraction)));
    return { started: true, progress, ...(beat.phase ? { stage: beat.phase } : {}) };
  }
  // Scheduled, not started: queued for a GPU (or between attempts: what was shown before stands).
  const shown = memory.get(d.workflowId);
  return shown !== undefined ? { started: true, progress: percent(shown) } : { started: false, progress: 0 };
}

/** A job object in its queued state; what follows (status, progress, error, times) is set by the caller. */
export function queuedJob(f: {
  id: string;
  model: string;
  prompt: string;
  size: string | null;
  frames: number | undefined;
  fps: number | undefined;
  createdAt: number;
  warnings?: readonly string[] | undefined;
}): VideoJob {
  return {
    id: f.id,
    object: 'video',
    model: f.model,
    prompt: f.prompt,
    status: 'queued',
    progress: 0,
    size: f.size,
    seconds: f.frames !== undefined && f.fps !== undefined ? secondsLabel(f.frames, f.fps) : '0',
    ...(f.frames !== undefined ? { num_frames: f.frames } : {}),
    ...(f.fps !== undefined ? { fps: f.fps } : {}),
    quality: 'default',
    created_at: f.createdAt,
    completed_at: null,
    expires_at: null,
    remixed_from_video_id: null,
    error: null,
    media_type: 'video/mp4',
    file_name: null,
    inference_time_s: null,
    ...(f.warnings && f.warnings.length > 0 ? { warnings: [...f.warnings] } : {}),
  };
}

export function isVideoRender(d: WorkflowExecutionDescription): boolean {
  return d.memo?.kind === 'video';
}

/** The job behind render `id`; VideoNotFoundError when there is none (or it is not a video render). */
export async function readJob(client: Client, id: string, viewer: Viewer = EVERYONE, memory: ProgressMemory = progressMemory): Promise<JobView> {
  const handle: WorkflowHandle<RenderWorkflow> = client.workflow.getHandle<RenderWorkflow>(id);
  let d: WorkflowExecutionDescription;
  try {
    d = await handle.describe();
  } catch (err) {
    if ((err as Error).name === 'WorkflowNotFoundError') throw new VideoNotFoundError(`video ${id} not found`);
    throw err;
  }
  // Another key's video is not found, exactly as one that does not exist.
  if (!isVideoRender(d) || !canSee(viewer, ownerOf(d))) throw new VideoNotFoundError(`video ${id} not found`);
  const memo = d.memo ?? {};
  const frames = typeof memo.frames === 'number' ? memo.frames : undefined;
  const fps = typeof memo.fps === 'number' ? memo.fps : undefined;
  const job = queuedJob({
    id,
    model: d.typedSearchAttributes.get(RENDER_MODEL) ?? '',
    prompt: typeof memo.videoPrompt === 'string' ? memo.videoPrompt : typeof memo.prompt === 'string' ? memo.prompt : '',
    size: typeof memo.size === 'string' ? memo.size : null,
    frames,
    fps,
    createdAt: secs(d.startTime) ?? 0,
    warnings: Array.isArray(memo.warnings) ? memo.warnings.filter((w): w is string => typeof w === 'string') : undefined,
  });
  const status = d.status.name;
  if (status === 'RUNNING') {
    const p = gpuProgress(d, client, job.model, memory);
    job.status = p.started ? 'in_progress' : 'queued';
    job.progress = p.progress;
    if (p.stage) job.stage = p.stage;
    return { job, cancelled: false };
  }
  job.completed_at = secs(d.closeTime);
  if (status === 'COMPLETED') {
    const result = await handle.result();
    job.status = 'completed';
    job.progress = 100;
    job.file_name = `${id}.mp4`;
    job.inference_time_s = inferenceSeconds(result);
    job.outcome = outcomeOf(result).outcome;
    return { job, result, cancelled: false };
  }
  if (status === 'CANCELLED') return { job, cancelled: true };
  const failure = await handle.result().then(
    () => undefined,
    (err: unknown) => classifyFailure(id, err),
  );
  job.status = 'failed';
  job.error = { code: failure?.status ?? 500, message: failure?.message ?? `render ${id} ended as ${status.toLowerCase()}`, type: failure?.kind ?? status };
  return { job, failedStatus: failure?.status ?? 500, cancelled: false };
}

/** Seconds spent in ComfyUI (the prompt attempts), from the render's stage timings. */
export function inferenceSeconds(result: RenderResult): number {
  const ms = result.timings.filter((t) => t.stage.startsWith('runPrompt')).reduce((a, t) => a + t.ms, 0);
  return Math.round(ms) / 1000;
}

export interface JobPage {
  object: 'list';
  data: VideoJob[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/**
 * Jobs newest first (`order=desc`, the default) or oldest first, `limit` per page, after the job `after`.
 * Visibility lists by start time; the cursor is the start time of `after`.
 */
export async function listJobs(client: Client, opts: { after?: string; limit: number; order: 'asc' | 'desc' }, viewer: Viewer = EVERYONE): Promise<JobPage> {
  let query = `WorkflowType = 'render' AND RenderKind = 'video'`;
  // Key names are letters, digits, . _ - (auth/keys.ts): safe to quote.
  const owner = listOwnerFilter(viewer);
  if (owner !== undefined) query += ` AND RenderOwner = '${owner}'`;
  if (opts.after) {
    const d = await client.workflow
      .getHandle(opts.after)
      .describe()
      .catch(() => undefined);
    if (!d || !isVideoRender(d) || !canSee(viewer, ownerOf(d))) throw new VideoNotFoundError(`after: video ${opts.after} not found`);
    const t = d.startTime.toISOString();
    query += opts.order === 'desc' ? ` AND StartTime < '${t}'` : ` AND StartTime > '${t}'`;
  }
  const ids: string[] = [];
  // Visibility pages newest first: for ascending order read them all (bounded) and take the oldest.
  const want = opts.order === 'desc' ? opts.limit + 1 : 10_000;
  for await (const w of client.workflow.list({ query, pageSize: Math.min(100, Math.max(opts.limit + 1, 1)) })) {
    ids.push(w.workflowId);
    if (ids.length >= want) break;
  }
  if (opts.order === 'asc') ids.reverse();
  const pageIds = ids.slice(0, opts.limit);
  const data: VideoJob[] = [];
  for (const id of pageIds) {
    const view = await readJob(client, id, viewer).catch(() => undefined);
    if (view && !view.cancelled) data.push(view.job);
  }
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: ids.length > opts.limit };
}
