/**
 * Video jobs are render workflows (`render-…`, search attribute RenderKind = video): the job object of
 * `GET /v1/videos/{id}` (vLLM-Omni's VideoResponse, docs/video-api.md) is read from Temporal, so
 * every front answers for every job and a restarted front loses nothing.
 * - status: a running workflow is `queued` until its GPU activity has started, then `in_progress`;
 *   completed → `completed`; failed / timed out / terminated → `failed` with `error {code, message}`;
 *   cancelled (DELETE) → deleted.
 * - progress: from the GPU activity's live heartbeat (sampler step / steps), rising 0 → 100.
 */
import { canSee, EVERYONE, listOwnerFilter, ownerOf, type Viewer } from '../../renders/owner.ts';
import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { decodeFirst } from '../../operators/failure.ts';
import type { RenderResult } from '../../render/types.ts';
import { RENDER_MODEL } from '../../temporal/search-attributes.ts';
import type { render } from '../../workflows/render.ts';
import { classifyFailure } from '../../renders/render-service.ts';
import { secondsLabel } from '../../models/video.ts';
import { progressAfterSampler } from '../../models/video-tasks.ts';

const { temporal } = proto;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

/** Activities that run on the workflow's own queue (bookkeeping): any other started activity is the GPU. */
const BOOKKEEPING = new Set(['stopPrompts']);

export type VideoStatus = 'queued' | 'in_progress' | 'completed' | 'failed';

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

function gpuProgress(d: WorkflowExecutionDescription, client: Client, model: string): { started: boolean; progress: number } {
  const pending = d.raw.pendingActivities ?? [];
  const converter = client.options.loadedDataConverter.payloadConverter;
  let started = false;
  let progress = 0;
  // Nothing pending once the render has started: its GPU attempt has just returned (the workflow is about
  // to complete) or it waits between attempts. The very first workflow task (history: started, task
  // scheduled, task started) is the only moment before the first attempt is scheduled.
  if (pending.length === 0) return d.historyLength > 4 ? { started: true, progress: 96 } : { started: false, progress: 0 };
  for (const a of pending) {
    const name = a.activityType?.name ?? '';
    if (BOOKKEEPING.has(name) || a.state !== STARTED) continue;
    started = true;
    const beat = (decodeFirst(converter, a.heartbeatDetails) ?? {}) as { value?: unknown; max?: unknown; node?: unknown; fraction?: unknown };
    if (typeof beat.fraction === 'number') {
      // The attempt's rising fraction: sampling, then the (long) video decode and the save as stages.
      progress = Math.max(progress, 1 + Math.floor(95 * Math.min(1, Math.max(0, beat.fraction))));
      continue;
    }
    const value = typeof beat.value === 'number' ? beat.value : 0;
    const max = typeof beat.max === 'number' && beat.max > 0 ? beat.max : 0;
    // The model's family says where its nodes after the sampler sit (their own 0/1 progress must not take
    // the job back from 89 to 1).
    const after = typeof beat.node === 'string' ? progressAfterSampler(model, beat.node) : undefined;
    // Sampling is most of a video's time: 1..89 follows the sampler's steps, the nodes after it 90..96.
    const p = after ?? (max > 1 ? 1 + Math.floor(88 * Math.min(1, value / max)) : 1);
    progress = Math.max(progress, p);
  }
  return { started, progress };
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
  };
}

export function isVideoRender(d: WorkflowExecutionDescription): boolean {
  return d.memo?.kind === 'video';
}

/** The job behind render `id`; VideoNotFoundError when there is none (or it is not a video render). */
export async function readJob(client: Client, id: string, viewer: Viewer = EVERYONE): Promise<JobView> {
  const handle: WorkflowHandle<typeof render> = client.workflow.getHandle<typeof render>(id);
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
  });
  const status = d.status.name;
  if (status === 'RUNNING') {
    const p = gpuProgress(d, client, job.model);
    job.status = p.started ? 'in_progress' : 'queued';
    job.progress = p.progress;
    return { job, cancelled: false };
  }
  job.completed_at = secs(d.closeTime);
  if (status === 'COMPLETED') {
    const result = await handle.result();
    job.status = 'completed';
    job.progress = 100;
    job.file_name = `${id}.mp4`;
    job.inference_time_s = inferenceSeconds(result);
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
