/**
 * What one `runPrompt` attempt's phases (run-prompt.ts) hand each other: the attempt's fixed facts, the ComfyUI
 * it talks to, how far it got (which the failure paths read to decide what to stop), its heartbeats and its
 * live previews.
 */
import type { Context } from '@temporalio/activity';
import type { ComfyClient } from '../comfyui/client.ts';
import type { FollowProgress } from '../comfyui/follow-types.ts';
import type { Logger } from '../log.ts';
import { clearPreview, previewsWanted, writePreview } from '../progress/previews.ts';
import type { Backend, StageTiming } from '../contracts/render.ts';
import { clientFor, type ActivityDeps } from './deps.ts';
import type { ItemProgress } from './item-progress.ts';
import { hasPartialImage } from './partial-output.ts';
import type { RenderExecution } from './prompt-ids.ts';
import type { PromptHeartbeat, RunPromptInput } from '../contracts/activities.ts';

/** Heartbeat tick. The SDK throttles the RPCs (worker.ts sets the cap), so ticking often costs nothing and
 *  lets a cancellation, which arrives only in a heartbeat response, reach us within seconds. */
export const HEARTBEAT_TICK_MS = 1_000;
/** Live previews are written at most this often (a client polls progress about once a second). */
const PREVIEW_MIN_INTERVAL_MS = 250;

/** The attempt's fixed facts, read by every phase. */
export interface Attempt {
  deps: ActivityDeps;
  input: RunPromptInput;
  /** The render's workflow execution: prompt ids derive from it. */
  execution: RenderExecution;
  signal: AbortSignal;
  startedAt: number;
  /** How long an interrupt (and then `/free`) gets to stop a prompt before escalating. */
  graceMs: number;
  /** Stage timings, appended as the phases end. */
  timings: StageTiming[];
  /** Set when the attempt, told to stop, left its prompt in ComfyUI for the next attempt (attempt-failure.ts). */
  leftRunning?: { target: Target; promptId: string };
}

/** The ComfyUI the attempt talks to: the leased one, or the one an earlier attempt's prompt lives on. */
export interface Target {
  backend: Backend;
  client: ComfyClient;
  log: Logger;
}

export function targetOf(deps: ActivityDeps, backend: Backend, log: Logger): Target {
  return { backend, client: clientFor(deps, backend), log };
}

/** How far the attempt got: what the failure paths read to decide what to stop, and where. */
export interface Reached {
  target: Target;
  /** '' until the prompt is known (derived for a submission, found for a re-attach). */
  promptId: string;
  /** `POST /prompt` sent. */
  submitSent: boolean;
  /** ComfyUI answered the submission (or the prompt is an earlier attempt's, found queued or running). */
  submitConfirmed: boolean;
}

/** Where the item sits in its render, so every progress route reads the render's progress from the heartbeat alone. */
export function itemPosition(input: RunPromptInput): { item?: number; items?: number } {
  return input.request ? { item: input.item, items: input.request.batchSize * input.request.nIter } : {};
}

/**
 * The attempt's heartbeat: the first names the backend at once (if this worker dies, the next attempt knows
 * where to look); progress events replace it; a tick repeats it through silent stretches (a model loading,
 * a stall's escalation), or Temporal would think the worker died.
 */
export class AttemptHeartbeat {
  /** The last heartbeat sent: its step is what a stopped prompt's partial result reports. */
  beat: PromptHeartbeat;
  private readonly ticker: NodeJS.Timeout;
  private readonly position: { item?: number; items?: number };

  constructor(
    private readonly ctx: Context,
    readonly stages: ItemProgress,
    input: RunPromptInput,
    backendId: string,
    startedAt: number,
  ) {
    this.position = itemPosition(input);
    this.beat = { backend: backendId, promptId: '', lastEventAt: startedAt, attempt: input.attempt, ...this.position };
    ctx.heartbeat(this.beat);
    this.ticker = setInterval(() => {
      if (this.beat.phase !== undefined) Object.assign(this.beat, stages.tick(Date.now()));
      ctx.heartbeat(this.beat);
    }, HEARTBEAT_TICK_MS);
  }

  /** The prompt is known (submitted, or found on `backendId`): say so at once. */
  prompt(backendId: string, promptId: string): void {
    this.beat = { ...this.beat, backend: backendId, promptId };
    this.ctx.heartbeat(this.beat);
  }

  /** A progress report of the followed prompt (FollowOptions.onProgress). */
  readonly onProgress = (p: FollowProgress): void => {
    const { backend, attempt } = this.beat;
    const beat: PromptHeartbeat = { backend, promptId: p.promptId, lastEventAt: p.lastEventAt ?? p.lastActivityAt, attempt, ...this.position };
    if (p.node !== undefined) beat.node = p.node;
    if (p.value !== undefined) beat.value = p.value;
    if (p.max !== undefined) beat.max = p.max;
    this.beat = Object.assign(beat, this.stages.update(p.node, p.value, p.max, Date.now()));
    this.ctx.heartbeat(this.beat);
  };

  stop(): void {
    clearInterval(this.ticker);
  }
}

/**
 * Live previews for /sdapi/v1/progress, at most a few per second, only when a client watches. The last one is
 * also what an interrupted or skipped item answers with (partial-output.ts), so image renders always ask for them.
 */
export class AttemptPreviews {
  /** The last preview frame, kept for a partial result. */
  last: Buffer | undefined;
  private readonly watched: boolean;
  private readonly keepPartial: boolean;
  private lastAt = 0;

  constructor(
    private readonly dataDir: string,
    private readonly input: RunPromptInput,
    private readonly log: () => Logger,
  ) {
    this.watched = previewsWanted(dataDir);
    this.keepPartial = hasPartialImage(input.request);
  }

  /** Whether the prompt is submitted with previews on (`extra_data.preview_method`) and followed with `onPreview`. */
  wanted(): boolean {
    return this.watched || this.keepPartial;
  }

  readonly onPreview = (image: Buffer): void => {
    if (this.keepPartial) this.last = Buffer.from(image);
    if (!this.watched) return;
    const now = Date.now();
    if (now - this.lastAt < PREVIEW_MIN_INTERVAL_MS) return;
    this.lastAt = now;
    try {
      writePreview(this.dataDir, this.input.renderId, image);
    } catch (err) {
      this.log().debug({ err: (err as Error).message }, 'could not write preview');
    }
  };

  /** The attempt ended: no stale preview outlives it. */
  clear(): void {
    if (this.watched) clearPreview(this.dataDir, this.input.renderId);
  }
}
