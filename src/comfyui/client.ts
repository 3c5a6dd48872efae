/**
 * Typed ComfyUI client (docs/comfyui-protocol.md). One instance per backend: a keep-alive connection pool
 * (transport.ts), and per-instance memory of which optional APIs this ComfyUI has (jobs API v0.6+, cancel v0.26+), learned by
 * probing rather than assumed from a version string.
 *
 * Every response is validated with zod at this boundary. Errors are classified here (errors.ts) so callers
 * never interpret HTTP statuses themselves.
 */
import { Blob } from 'node:buffer';
import { MultipartForm } from './multipart.ts';
import { z } from 'zod';
import type { ComfyFileRef } from './graph.ts';
import { parseObjectInfo, type NodeInfo, type ObjectInfo } from './object-info.ts';
import { ComfyRequestError, ComfyUnavailableError, ComfyUnsupportedError, ComfyValidationError } from './errors.ts';
import {
  cancelResponseSchema,
  featuresSchema,
  historyOutputsSchema,
  historyResponseSchema,
  jobSchema,
  promptErrorResponseSchema,
  promptResponseSchema,
  queueResponseSchema,
  systemStatsSchema,
  uploadResponseSchema,
  type HistoryItem,
  type Job,
  type SystemStats,
} from './schemas.ts';
import { executionErrorInfo, extractFiles, statusFromHistory, type PromptStatus } from './status.ts';
import { openEventStream, type EventSession } from './event-stream.ts';
import { HttpTransport, noopLogger, safeJson, type CallOptions, type ComfyLogger } from './transport.ts';
import {
  DEFAULT_TIMEOUTS,
  type Capabilities,
  type CancelResult,
  type ComfyClientOptions,
  type ComfyTimeouts,
  type QueueEntry,
  type QueueSnapshot,
  type SubmitPromptInput,
  type SubmitPromptResult,
  type UploadImageInput,
  type UploadResult,
} from './client-types.ts';
import { trimTrailingSlashes } from '../text/trim.ts';

export type { CallOptions, ComfyLogger } from './transport.ts';
export * from './client-types.ts';

export class ComfyClient {
  readonly baseUrl: string;
  readonly timeouts: ComfyTimeouts;
  private readonly logger: ComfyLogger;
  private readonly http: HttpTransport;
  private readonly wsBaseUrl: string;
  /** undefined = not yet known. Learned from the first jobs call; older ComfyUI (v0.3.45..v0.5) lacks it. */
  private jobsApi: boolean | undefined;
  private cancelApi: boolean | undefined;
  /** `/object_info` problems already logged (node + problem): the cache refetches every minute. */
  private readonly objectInfoProblems = new Set<string>();
  private readonly socketAhead: SocketAhead | undefined;

  constructor(opts: ComfyClientOptions) {
    const url = new URL(opts.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`ComfyUI baseUrl must be http(s): ${opts.baseUrl}`);
    const prefix = trimTrailingSlashes(url.pathname);
    this.baseUrl = `${url.origin}${prefix}`;
    this.wsBaseUrl = `${url.protocol === 'https:' ? 'wss:' : 'ws:'}//${url.host}${prefix}`;
    this.logger = opts.logger ?? noopLogger;
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
    if (opts.keepSocketAhead) this.socketAhead = new SocketAhead((o) => this.openEventStream(o));
    this.http = new HttpTransport({ url, logger: this.logger, requestMs: this.timeouts.requestMs, connections: opts.connections ?? 8 });
  }

  /** Whether the jobs API is known to exist (undefined until a jobs call or `capabilities()` found out). */
  get jobsApiSupported(): boolean | undefined {
    return this.jobsApi;
  }

  /** Whether ComfyUI answered a request of this client in the last `ms` milliseconds. */
  answeredWithin(ms: number, now = Date.now()): boolean {
    return now - this.http.lastAnsweredAt <= ms;
  }

  async close(): Promise<void> {
    await this.http.close();
  }

  // ---------------------------------------------------------------- prompts

  /**
   * `POST /prompt`. Throws ComfyValidationError on HTTP 400 and on HTTP 200 with non-empty `node_errors`;
   * any other failure is ComfyUnavailableError (retryable; check `promptStatus` before resubmitting).
   */
  async submitPrompt(input: SubmitPromptInput, opts?: CallOptions): Promise<SubmitPromptResult> {
    const body: Record<string, unknown> = { prompt: input.graph };
    if (input.promptId !== undefined) body['prompt_id'] = input.promptId;
    if (input.clientId !== undefined) body['client_id'] = input.clientId;
    if (input.extraData !== undefined) body['extra_data'] = input.extraData;
    if (input.number !== undefined) body['number'] = input.number;
    if (input.front !== undefined) body['front'] = input.front;

    const res = await this.http.call('POST', '/prompt', { ...opts, json: body });
    if (res.status === 400) {
      const parsed = promptErrorResponseSchema.safeParse(safeJson(res.body));
      if (!parsed.success) throw new ComfyRequestError({ url: res.url, status: 400, body: res.body.toString('utf8') });
      const err = parsed.data.error;
      throw new ComfyValidationError({
        status: 400,
        error: typeof err === 'string' ? { type: 'error', message: err, details: '', extra_info: {} } : err,
        nodeErrors: parsed.data.node_errors,
      });
    }
    if (res.status !== 200) throw new ComfyUnavailableError({ url: res.url, status: res.status, body: res.body.toString('utf8') });
    const ok = this.http.parse(res, promptResponseSchema);
    if (Object.keys(ok.node_errors).length > 0) {
      if (input.cancelPartial ?? true) {
        await this.cancelJob(ok.prompt_id, opts).catch((e: unknown) =>
          this.logger.warn({ err: e, promptId: ok.prompt_id }, 'could not cancel partially queued prompt'),
        );
      }
      throw new ComfyValidationError({
        status: 200,
        error: {
          type: 'prompt_outputs_failed_validation',
          message: 'Some prompt outputs failed validation (ComfyUI queued the rest)',
          details: '',
          extra_info: {},
        },
        nodeErrors: ok.node_errors,
        queuedPromptId: ok.prompt_id,
      });
    }
    return { promptId: ok.prompt_id, number: ok.number, nodeErrors: ok.node_errors };
  }

  /**
   * `GET /api/jobs/{id}` (v0.6+). `undefined` when ComfyUI does not know the id. Throws
   * ComfyUnsupportedError when this ComfyUI has no jobs API (then use `/history` + `/queue`).
   */
  async getJob(id: string, opts?: CallOptions): Promise<Job | undefined> {
    if (this.jobsApi === false) throw new ComfyUnsupportedError('the jobs API (ComfyUI >= v0.6.0)');
    const res = await this.http.call('GET', `/api/jobs/${encodeURIComponent(id)}`, opts);
    if (res.status === 200) {
      this.jobsApi = true;
      return this.http.parse(res, jobSchema);
    }
    if (res.status === 404) {
      // A 404 means either "no such job" or "no such route"; only the list route tells them apart.
      const supported = this.jobsApi ?? (await this.probeJobsApi(opts));
      if (!supported) throw new ComfyUnsupportedError('the jobs API (ComfyUI >= v0.6.0)');
      return undefined;
    }
    this.http.fail(res);
  }

  private async probeJobsApi(opts?: CallOptions): Promise<boolean> {
    const res = await this.http.call('GET', '/api/jobs', { ...opts, query: { limit: '1' } });
    if (res.status === 200) this.jobsApi = true;
    else if (res.status === 404 || res.status === 405) this.jobsApi = false;
    else this.http.fail(res);
    this.logger.debug({ baseUrl: this.baseUrl, jobsApi: this.jobsApi }, 'probed ComfyUI jobs API');
    return this.jobsApi ?? false;
  }

  /** `GET /history/{id}`: the item, or undefined while queued/running, after a restart, or if unknown. */
  async getHistory(id: string, opts?: CallOptions): Promise<HistoryItem | undefined> {
    const all = await this.http.getJson(`/history/${encodeURIComponent(id)}`, historyResponseSchema, opts);
    return all[id];
  }

  /** `GET /queue`. `queue_pending` is an unsorted heap copy; `pending` here is sorted by number (run order). */
  async getQueue(opts?: CallOptions): Promise<QueueSnapshot> {
    const q = await this.http.getJson('/queue', queueResponseSchema, opts);
    const entry = (raw: [number, string, ...unknown[]]): QueueEntry => {
      const extra = raw[3];
      const cid = extra && typeof extra === 'object' ? (extra as Record<string, unknown>)['client_id'] : undefined;
      return { number: raw[0], promptId: raw[1], clientId: typeof cid === 'string' && cid !== '' ? cid : undefined, raw };
    };
    const running = q.queue_running.map(entry);
    const pending = q.queue_pending.map(entry).sort((a, b) => a.number - b.number);
    return { running, pending, runningIds: running.map((e) => e.promptId), pendingIds: pending.map((e) => e.promptId) };
  }

  /**
   * Reconcile jobs API, `/queue` and `/history/{id}` into one state. Without the jobs API the queue is read
   * BEFORE history: ComfyUI moves a prompt from running to history under one mutex, so this order can never
   * miss a prompt that is finishing (history-then-queue could report a live prompt as unknown).
   * With it, "Job not found" is final: the route reads the queue, then history, in that same order
   * (server.py `get_job_by_id`), and the route itself is known to exist (getJob). Asking `/queue` and
   * `/history` again would tell nothing new, and every submit asks this first (two round trips, ~2 ms).
   */
  async promptStatus(promptId: string, opts?: CallOptions): Promise<PromptStatus> {
    if (this.jobsApi !== false) {
      let job: Job | undefined;
      let viaJobs = true;
      try {
        job = await this.getJob(promptId, opts);
      } catch (e) {
        if (!(e instanceof ComfyUnsupportedError)) throw e;
        viaJobs = false;
      }
      if (viaJobs) {
        if (job === undefined) return { state: 'unknown' };
        if (job.status === 'pending') return { state: 'pending' };
        if (job.status === 'in_progress') return { state: 'running' };
        const item = await this.getHistory(promptId, opts);
        if (item) return statusFromHistory(promptId, item);
        // History entry deleted in between (retention, POST /history delete): fall back on the job itself.
        const outputs = historyOutputsSchema.safeParse(job.outputs);
        const out = outputs.success ? outputs.data : {};
        if (job.status === 'failed') return { state: 'error', error: executionErrorInfo(promptId, job.execution_error ?? {}), outputs: out };
        if (job.status === 'cancelled') return { state: 'interrupted', outputs: out };
        return { state: 'success', outputs: out, files: extractFiles(out) };
      }
    }
    return this.legacyStatus(promptId, opts);
  }

  private async legacyStatus(promptId: string, opts?: CallOptions): Promise<PromptStatus> {
    const q = await this.getQueue(opts);
    if (q.runningIds.includes(promptId)) return { state: 'running' };
    if (q.pendingIds.includes(promptId)) return { state: 'pending' };
    const item = await this.getHistory(promptId, opts);
    if (item) return statusFromHistory(promptId, item);
    return { state: 'unknown' };
  }

  /**
   * `POST /interrupt`. With `promptId` (v0.3.57+) only that prompt, if running; WITHOUT it, whatever runs,
   * whoever owns it. Older servers ignore `prompt_id` and interrupt globally.
   */
  async interrupt(promptId?: string, opts?: CallOptions): Promise<void> {
    await this.http.postNoContent('/interrupt', promptId !== undefined ? { prompt_id: promptId } : {}, opts);
  }

  /** `POST /queue {delete}`: removes pending items only. */
  async deleteFromQueue(ids: string[], opts?: CallOptions): Promise<void> {
    await this.http.postNoContent('/queue', { delete: ids }, opts);
  }

  /** `POST /history {delete}`. */
  async deleteHistory(ids: string[], opts?: CallOptions): Promise<void> {
    await this.http.postNoContent('/history', { delete: ids }, opts);
  }

  /**
   * Stop a prompt wherever it is. v0.26+ `POST /api/jobs/{id}/cancel` is atomic; older servers get a
   * dequeue then a targeted interrupt (in that order, so a prompt that starts in between is still caught).
   */
  async cancelJob(id: string, opts?: CallOptions): Promise<CancelResult> {
    if (this.cancelApi !== false && this.jobsApi !== false) {
      const res = await this.http.call('POST', `/api/jobs/${encodeURIComponent(id)}/cancel`, { ...opts, json: {} });
      if (res.status === 200) {
        this.cancelApi = true;
        return { method: 'jobs-api', cancelled: this.http.parse(res, cancelResponseSchema).cancelled };
      }
      if (res.status === 404 || res.status === 405) this.cancelApi = false;
      else this.http.fail(res);
    }
    await this.deleteFromQueue([id], opts);
    await this.interrupt(id, opts);
    return { method: 'queue-delete+interrupt' };
  }

  // ---------------------------------------------------------------- files

  /** `POST /upload/image` (multipart). Identical bytes under the same name are a server-side no-op. */
  async uploadImage(input: UploadImageInput, opts?: CallOptions): Promise<UploadResult> {
    const form = new MultipartForm();
    const type = input.mime ?? 'application/octet-stream';
    // A Blob (e.g. file-backed, from the blob store) is streamed as it is; bytes in memory are wrapped.
    const image = input.bytes instanceof Blob ? input.bytes : new Blob([input.bytes], { type });
    form.append('image', image, input.filename);
    form.append('overwrite', input.overwrite ? 'true' : 'false');
    form.append('subfolder', input.subfolder ?? '');
    form.append('type', input.type ?? 'input');
    const res = await this.http.call('POST', '/upload/image', { ...opts, form, timeoutMs: opts?.timeoutMs ?? this.timeouts.transferMs });
    if (res.status !== 200) this.http.fail(res);
    return this.http.parse(res, uploadResponseSchema);
  }

  /** `GET /view`: the file as stored (no re-encoding). 404 → ComfyRequestError with status 404. */
  async view(file: ComfyFileRef, opts?: CallOptions): Promise<{ data: Buffer; contentType: string | undefined }> {
    const res = await this.http.call('GET', '/view', {
      ...opts,
      timeoutMs: opts?.timeoutMs ?? this.timeouts.transferMs,
      query: { filename: file.filename, subfolder: file.subfolder, type: file.type },
    });
    if (res.status !== 200) this.http.fail(res);
    const ct = res.headers['content-type'];
    return { data: res.body, contentType: Array.isArray(ct) ? ct[0] : ct };
  }

  /**
   * `GET /view` as a stream, for outputs too large to hold (videos): the caller consumes `body` (and must,
   * or the connection stays busy). `timeoutMs` bounds the headers and each gap between body chunks.
   */
  async viewStream(
    file: ComfyFileRef,
    opts?: CallOptions,
  ): Promise<{ body: AsyncIterable<Uint8Array>; contentType: string | undefined; contentLength: number | undefined }> {
    const { body, headers } = await this.http.stream('/view', {
      ...opts,
      timeoutMs: opts?.timeoutMs ?? this.timeouts.transferMs,
      query: { filename: file.filename, subfolder: file.subfolder, type: file.type },
    });
    const ct = headers['content-type'];
    const cl = Number(headers['content-length']);
    return { body, contentType: Array.isArray(ct) ? ct[0] : ct, contentLength: Number.isFinite(cl) ? cl : undefined };
  }

  // ---------------------------------------------------------------- server info

  /** All nodes, read leniently (object-info.ts): no node class is ever dropped. A used part that cannot be
   *  read is left out and logged once per client, not on every refetch. */
  objectInfo(cls?: undefined, opts?: CallOptions): Promise<ObjectInfo>;
  /** One node class; undefined when unknown (ComfyUI answers `{}`). */
  objectInfo(cls: string, opts?: CallOptions): Promise<NodeInfo | undefined>;
  async objectInfo(cls?: string, opts?: CallOptions): Promise<ObjectInfo | NodeInfo | undefined> {
    const path = cls === undefined ? '/object_info' : `/object_info/${encodeURIComponent(cls)}`;
    const raw = await this.http.getJson(path, recordSchema, { ...opts, timeoutMs: opts?.timeoutMs ?? this.timeouts.objectInfoMs });
    const out = parseObjectInfo(raw, ({ node, problem }) => {
      const key = `${node}\0${problem}`;
      if (this.objectInfoProblems.has(key)) return;
      this.objectInfoProblems.add(key);
      this.logger.warn({ node, problem }, "part of a node's /object_info entry is unreadable; the node is kept without it");
    });
    return cls === undefined ? out : out[cls];
  }

  async systemStats(opts?: CallOptions): Promise<SystemStats> {
    return this.http.getJson('/system_stats', systemStatsSchema, opts);
  }

  async features(opts?: CallOptions): Promise<Record<string, unknown>> {
    return this.http.getJson('/features', featuresSchema, opts);
  }

  /** `POST /free`; acted on after the current prompt. `freeMemory` also drops all execution caches. */
  async free(input: { unloadModels?: boolean; freeMemory?: boolean }, opts?: CallOptions): Promise<void> {
    await this.http.postNoContent('/free', { unload_models: input.unloadModels ?? false, free_memory: input.freeMemory ?? false }, opts);
  }

  /** Version from `/system_stats` and whether `/api/jobs` exists (probed, not inferred from the version). */
  async capabilities(opts?: CallOptions): Promise<Capabilities> {
    const stats = await this.systemStats(opts);
    const jobsApi = this.jobsApi ?? (await this.probeJobsApi(opts));
    return { version: stats.system.comfyui_version, jobsApi };
  }

  // ---------------------------------------------------------------- events

  /**
   * Open a WebSocket with a fresh client id and wait until ComfyUI registered it. Submit prompts with
   * `session.clientId`, then `followPrompt({session, ...})`. The caller closes the session.
   */
  openEventStream(opts?: { signal?: AbortSignal; replayBufferSize?: number; clientId?: string }): Promise<EventSession> {
    const o: Parameters<typeof openEventStream>[0] = {
      wsBaseUrl: this.wsBaseUrl,
      openTimeoutMs: this.timeouts.wsOpenMs,
      pingIntervalMs: this.timeouts.wsPingIntervalMs,
    };
    // A given id is only for reclaiming a prompt's events once its old socket is known closed (follow.ts).
    if (opts?.clientId) o.clientId = opts.clientId;
    if (opts?.signal) o.signal = opts.signal;
    if (opts?.replayBufferSize !== undefined) o.replayBufferSize = opts.replayBufferSize;
    return openEventStream(o);
  }

  /**
   * A socket for a new prompt, with a fresh client id: the one opened ahead (`keepSocketAhead`,
   * `refillSocketAhead`) when it is still open, else a new one. The caller closes it, as any session.
   */
  takeEventStream(opts?: { signal?: AbortSignal }): Promise<EventSession> {
    return this.socketAhead ? this.socketAhead.take(opts) : this.openEventStream(opts);
  }

  /**
   * Opens the socket of the next prompt now, unless one is open or opening (`keepSocketAhead` only). Called
   * once a prompt's outputs are collected: ComfyUI is then between prompts, and the open costs no prompt's time.
   * Resolves once the socket is ready or its open failed (never rejects).
   */
  refillSocketAhead(): Promise<void> {
    return this.socketAhead?.refill() ?? Promise.resolve();
  }

  /** Closes the socket kept ahead; none is opened after this. */
  closeSocketAhead(): Promise<void> {
    return this.socketAhead?.close() ?? Promise.resolve();
  }
}

const recordSchema = z.record(z.string(), z.unknown());

/**
 * One event socket kept open for the next prompt. A take hands it over (one that closed meanwhile, ComfyUI
 * restarted or a ping unanswered, is replaced by a new one opened then, as without this); a refill opens the
 * next. A failed open is not retried: the next take opens its own, as without this.
 */
class SocketAhead {
  private ready: EventSession | undefined;
  private opening: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly open: (opts?: { signal?: AbortSignal }) => Promise<EventSession>) {}

  take(opts?: { signal?: AbortSignal }): Promise<EventSession> {
    const ahead = this.ready;
    this.ready = undefined;
    if (ahead?.isOpen) {
      ahead.forgetEvents();
      return Promise.resolve(ahead);
    }
    void ahead?.close();
    return this.open(opts);
  }

  refill(): Promise<void> {
    if (this.opening) return this.opening;
    if (this.ready?.isOpen || this.closed) return Promise.resolve();
    void this.ready?.close();
    this.ready = undefined;
    this.opening = this.open().then(
      (s) => {
        this.opening = undefined;
        if (this.closed) void s.close();
        else this.ready = s;
      },
      () => {
        this.opening = undefined;
      },
    );
    return this.opening;
  }

  async close(): Promise<void> {
    this.closed = true;
    const ahead = this.ready;
    this.ready = undefined;
    await ahead?.close();
  }
}
