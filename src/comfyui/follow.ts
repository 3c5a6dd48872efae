/**
 * Follow one submitted prompt to its outcome: the core of "submit and follow" (docs/durability.md).
 *
 * - Event-driven on the happy path: `executing {node: null, prompt_id}` (sent after history is written,
 *   unlike `execution_success`) triggers one `/history/{id}` read and we resolve. No poll delay.
 * - Polling (`promptStatus` + `/queue`) only while there is no socket, or the socket has been silent about
 *   our prompt for `pollIntervalMs`, and at the stall deadline.
 * - A dropped socket is replaced by one with a FRESH client id. ComfyUI sends a prompt's
 *   events only to the socket named by its `client_id`, so the new socket only sees broadcast
 *   `status` frames; each one triggers an immediate status check, which keeps completion prompt.
 * - Progress, though, only ever goes to the prompt's own client id, and without it a long render would look
 *   stalled. So once the owning socket is known closed on ComfyUI's side (it closed the connection; not a
 *   ping timeout, where a half-open socket may still be registered) and a settle delay has let ComfyUI's
 *   cleanup of the old socket run, the follower reclaims the prompt's client id with a new socket. If that
 *   goes wrong (the new socket silently unregistered) we are no worse off than with a fresh id.
 * - Stall ≠ slow: we reject with ComfyStallError only when no event for our prompt arrived AND the queue
 *   did not move for `stallTimeoutMs`. Any event for our prompt (progress, executing, ...) resets it.
 */
import type { ComfyClient, QueueSnapshot } from './client.ts';
import {
  ComfyAbortError,
  ComfyExecutionError,
  ComfyInterruptedError,
  ComfyPromptLostError,
  ComfyStallError,
  ComfyUnavailableError,
  isConnectionRefused,
  type ExecutionErrorInfo,
} from './errors.ts';
import { eventPromptId, isTerminalExecutionError, type ComfyEvent } from './events.ts';
import { FollowSocket } from './follow-socket.ts';
import type { FollowOptions, FollowResult } from './follow-types.ts';
import { executionErrorInfo, statusFromHistory, type PromptStatus } from './status.ts';

/**
 * Re-attach: the attempt that owned the socket may still be alive (Temporal gave up on it, e.g. while the
 * server was unreachable); it learns so at its next heartbeat (throttled to 2 s, worker.ts) and closes its
 * socket. Reclaiming the id before that would get the new socket unregistered when the old one closes.
 */
const REOWN_AFTER_REATTACH_MS = 3_500;
/** Retries of `/history/{id}` after `executing:null`; it should already be written, this covers proxies. */
const HISTORY_RETRY_MS = [25, 50, 100, 200, 400];

export function followPrompt(client: ComfyClient, opts: FollowOptions): Promise<FollowResult> {
  return new Follower(client, opts).run();
}

class Follower {
  private readonly id: string;
  private readonly startAt = Date.now();
  private settled = false;
  private resolveFn!: (r: FollowResult) => void;
  private rejectFn!: (e: Error) => void;

  private state: 'pending' | 'running' = 'pending';
  private node: string | undefined;
  private value: number | undefined;
  private max: number | undefined;
  private lastOurEventAt: number | undefined;
  private lastActivityAt: number;
  private lastPollAt: number;
  private queueBaseline: QueueSnapshot | undefined;
  private lastQueueRemaining: number | undefined;
  private lastCheckFailed = false;
  /** Since when every status check was refused (ECONNREFUSED); undefined once one was not. */
  private refusedSince: number | undefined;
  private eventError: ExecutionErrorInfo | undefined;

  private readonly socket: FollowSocket;

  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private checkAgain = false;
  private finalizing = false;
  private readonly onAbort = (): void => this.fail(new ComfyAbortError(this.opts.signal?.reason));

  constructor(
    private readonly client: ComfyClient,
    private readonly opts: FollowOptions,
  ) {
    this.id = opts.promptId;
    this.lastActivityAt = this.startAt;
    this.lastPollAt = this.startAt;
    const submittedWith = opts.clientId ?? opts.session?.clientId;
    // The prompt's own client id, when we know it and may reclaim it (see the file comment).
    const ownerId = opts.ownerClientId || submittedWith || undefined;
    this.socket = new FollowSocket(client, opts, ownerId, {
      onEvent: (ev, at) => this.onEvent(ev, at),
      onAttach: () => {
        this.lastQueueRemaining = undefined;
      },
      checkNow: () => this.requestCheck(),
    });
  }

  run(): Promise<FollowResult> {
    const p = new Promise<FollowResult>((resolve, reject) => {
      this.resolveFn = resolve;
      this.rejectFn = reject;
    });
    const { signal, session } = this.opts;
    if (signal?.aborted) {
      this.fail(new ComfyAbortError(signal.reason));
      return p;
    }
    signal?.addEventListener('abort', this.onAbort, { once: true });

    const owner = session !== undefined && (this.opts.clientId === undefined || this.opts.clientId === session.clientId);
    if (session?.isOpen) {
      this.socket.attach(session, false, owner);
    } else {
      this.socket.scheduleReconnect(0);
    }
    // Re-attaching: the prompt's socket belonged to an attempt that has ended; take its id back.
    if (!this.socket.isOwner && this.opts.ownerClientId) this.socket.scheduleReown(REOWN_AFTER_REATTACH_MS);
    // With the owning socket, events tell us everything (incl. replayed ones); otherwise look now, since the
    // prompt may have progressed or finished while nobody was listening (re-attach, dropped socket).
    if (!this.socket.isOwner) this.requestCheck();
    this.schedule();
    return p;
  }

  // ------------------------------------------------------------ settle

  private cleanup(): void {
    this.settled = true;
    clearTimeout(this.timer);
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    this.socket.close();
  }

  private succeed(r: FollowResult): void {
    if (this.settled) return;
    this.cleanup();
    this.resolveFn(r);
  }

  private fail(e: Error): void {
    if (this.settled) return;
    this.cleanup();
    this.rejectFn(e);
  }

  /** Returns true when the status ended following. */
  private settleFrom(st: PromptStatus, via: 'event' | 'poll'): boolean {
    switch (st.state) {
      case 'success': {
        const r: FollowResult = { promptId: this.id, outputs: st.outputs, files: st.files, via };
        if (st.startedAt !== undefined) r.startedAt = st.startedAt;
        if (st.finishedAt !== undefined) r.finishedAt = st.finishedAt;
        this.succeed(r);
        return true;
      }
      case 'error':
        this.fail(new ComfyExecutionError(st.error));
        return true;
      case 'interrupted':
        this.fail(new ComfyInterruptedError(this.id, st.nodeId));
        return true;
      case 'unknown':
        this.fail(new ComfyPromptLostError(this.id));
        return true;
      default:
        return false;
    }
  }

  // ------------------------------------------------------------ events

  private onEvent(ev: ComfyEvent, at: number): void {
    if (this.settled) return;
    if (ev.type === 'status') {
      const qr = ev.data.status.exec_info.queue_remaining;
      // Only a shrinking queue is movement: new submissions by others say nothing about our prompt.
      if (this.lastQueueRemaining !== undefined && qr < this.lastQueueRemaining) this.activity(at);
      this.lastQueueRemaining = qr;
      // A socket that does not own the prompt gets no prompt events; a queue change may be our completion.
      if (!this.socket.isOwner) this.requestCheck();
      return;
    }
    const pid = eventPromptId(ev);
    // `executing` without prompt_id is the server's replay of the running node on (re)connect.
    const ours = pid === this.id || (pid === undefined && ev.type === 'executing' && this.socket.isOwner && ev.data.node !== null);
    if (!ours) return;

    this.lastOurEventAt = at;
    this.activity(at);
    switch (ev.type) {
      case 'execution_start':
        this.state = 'running';
        break;
      case 'executing':
        if (ev.data.node === null) {
          void this.finalize();
          return;
        }
        this.state = 'running';
        if (ev.data.node !== this.node) {
          this.node = ev.data.node;
          this.value = undefined;
          this.max = undefined;
        }
        break;
      case 'progress':
        this.state = 'running';
        if (ev.data.node != null) this.node = ev.data.node;
        this.value = ev.data.value;
        this.max = ev.data.max;
        break;
      case 'progress_state': {
        this.state = 'running';
        const running = Object.entries(ev.data.nodes).find(([, n]) => n.state === 'running');
        if (running) {
          this.node = running[1].node_id ?? running[0];
          this.value = running[1].value;
          this.max = running[1].max;
        }
        break;
      }
      case 'execution_error':
        // History (read on executing:null) is authoritative; keep this in case history cannot be read.
        if (isTerminalExecutionError(ev)) this.eventError = executionErrorInfo(this.id, ev.data);
        break;
      default:
        break;
    }
    this.progress('event');
    this.schedule();
  }

  /** `executing:null` for our prompt: history is written; read it once (retrying briefly) and settle. */
  private async finalize(): Promise<void> {
    if (this.finalizing || this.settled) return;
    this.finalizing = true;
    try {
      for (let i = 0; ; i++) {
        const item = await this.client.getHistory(this.id, this.callOpts());
        if (this.settled) return;
        if (item) {
          this.settleFrom(statusFromHistory(this.id, item), 'event');
          return;
        }
        if (this.eventError) {
          this.fail(new ComfyExecutionError(this.eventError));
          return;
        }
        const delay = HISTORY_RETRY_MS[i];
        if (delay === undefined) break;
        await sleep(delay);
        if (this.settled) return;
      }
      this.opts.logger?.warn({ promptId: this.id }, 'history still empty after executing:null; falling back to status checks');
    } catch (e) {
      if (this.settled) return;
      this.opts.logger?.warn({ promptId: this.id, err: e }, 'reading history after executing:null failed; falling back to status checks');
    } finally {
      this.finalizing = false;
    }
    this.requestCheck();
  }

  // ------------------------------------------------------------ polling and stall

  private activity(at: number): void {
    if (at > this.lastActivityAt) this.lastActivityAt = at;
  }

  private progress(source: 'event' | 'poll'): void {
    if (!this.opts.onProgress) return;
    try {
      this.opts.onProgress({
        promptId: this.id,
        state: this.state,
        node: this.node,
        value: this.value,
        max: this.max,
        lastEventAt: this.lastOurEventAt,
        lastActivityAt: this.lastActivityAt,
        source,
      });
    } catch (e) {
      this.opts.logger?.warn({ promptId: this.id, err: e }, 'onProgress threw');
    }
  }

  private callOpts(): { signal?: AbortSignal } {
    return this.opts.signal ? { signal: this.opts.signal } : {};
  }

  /** Next wake-up: a poll when silent, a queue baseline half-way to the stall deadline, the stall check. */
  private schedule(): void {
    if (this.settled) return;
    clearTimeout(this.timer);
    const { pollIntervalMs, stallTimeoutMs } = this.opts;
    const pollDue = Math.max(this.lastOurEventAt ?? 0, this.lastPollAt) + pollIntervalMs;
    const stallDue = this.lastActivityAt + stallTimeoutMs;
    const baselineDue = this.queueBaseline ? Infinity : this.lastActivityAt + stallTimeoutMs / 2;
    const wake = Math.min(pollDue, stallDue, baselineDue);
    this.timer = setTimeout(() => this.requestCheck(), Math.max(0, wake - Date.now()));
  }

  private requestCheck(): void {
    if (this.settled) return;
    if (this.checking || this.finalizing) {
      this.checkAgain = true;
      return;
    }
    void this.check();
  }

  private async check(): Promise<void> {
    this.checking = true;
    try {
      let st: PromptStatus | undefined;
      let queue: QueueSnapshot | undefined;
      try {
        [st, queue] = await Promise.all([this.client.promptStatus(this.id, this.callOpts()), this.client.getQueue(this.callOpts())]);
        this.lastCheckFailed = false;
        this.refusedSince = undefined;
      } catch (e) {
        if (this.settled) return;
        this.lastCheckFailed = true;
        this.opts.logger?.warn({ promptId: this.id, err: e }, 'ComfyUI status check failed');
        if (this.deadFromRefusals(e)) return;
      }
      if (this.settled) return;
      const now = Date.now();
      this.lastPollAt = now;
      if (st && this.settleFrom(st, 'poll')) return;
      if (st && (st.state === 'pending' || st.state === 'running')) {
        if (st.state !== this.state) this.activity(now);
        this.state = st.state;
      }
      if (queue) {
        if (this.queueBaseline && queueMoved(this.queueBaseline, queue)) this.activity(now);
        this.queueBaseline = queue;
      }
      if (st) this.progress('poll');
      const silentFor = now - this.lastActivityAt;
      if (silentFor >= this.opts.stallTimeoutMs) {
        const init: ConstructorParameters<typeof ComfyStallError>[0] = {
          promptId: this.id,
          silentForMs: silentFor,
          state: this.lastCheckFailed ? 'unreachable' : this.state,
        };
        if (this.lastOurEventAt !== undefined) init.lastEventAt = this.lastOurEventAt;
        this.fail(new ComfyStallError(init));
        return;
      }
    } finally {
      this.checking = false;
    }
    if (this.checkAgain) {
      this.checkAgain = false;
      this.requestCheck();
    }
    this.schedule();
  }

  /** Counts a failed check; true (and the follow failed) once connections were refused for refusedDeadMs. */
  private deadFromRefusals(e: unknown): boolean {
    const deadMs = this.opts.refusedDeadMs;
    if (!isConnectionRefused(e)) {
      this.refusedSince = undefined;
      return false;
    }
    const now = Date.now();
    this.refusedSince ??= now;
    if (deadMs === undefined || now - this.refusedSince < deadMs) return false;
    const refusedForMs = now - this.refusedSince;
    const url = e instanceof ComfyUnavailableError ? e.url : 'ComfyUI';
    this.fail(
      new ComfyUnavailableError({
        url,
        refusedForMs,
        cause: e,
        message: `ComfyUI at ${url} refused every connection for ${Math.round(refusedForMs / 1000)} s while prompt ${this.id} was ${this.state}: its process is gone`,
      }),
    );
    return true;
  }
}

/** Movement = the running set changed, or a pending item left the queue. New arrivals do not count. */
function queueMoved(before: QueueSnapshot, after: QueueSnapshot): boolean {
  if (before.runningIds.length !== after.runningIds.length) return true;
  if (before.runningIds.some((id, i) => after.runningIds[i] !== id)) return true;
  const pendingNow = new Set(after.pendingIds);
  return before.pendingIds.some((id) => !pendingNow.has(id));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
