/**
 * `/ws?clientId=`: ComfyUI's WebSocket events for that client's prompts, under this service's prompt ids.
 * The render runs on whichever GPU takes it (and again elsewhere on a retry); its progress is read where every
 * front can read it, in Temporal: the running attempt's heartbeat (`PromptHeartbeat` {node, value, max}) for
 * `execution_start`, `executing` and `progress`, and the workflow's result for `executed` (each output node,
 * its files named for `/view`), `execution_success` / `execution_error` / `execution_interrupted` and the final
 * `executing {node: null}`, sent once the history answers (as ComfyUI sends it after writing history).
 * As in ComfyUI, events go only to the socket of the prompt's `client_id` while it is connected; nothing is
 * replayed. Without a `client_id` only `status` is sent. Sampler previews go out as ComfyUI's binary
 * `PREVIEW_IMAGE` frames (`u32 1 | u32 1 JPEG or 2 PNG | image`): a prompt queued while its client's socket is
 * open is submitted with previews (progress/previews.ts: the worker writes the newest frame to DATA_DIR, which
 * the front reads while it follows the render, as for A1111's progress), so front and worker share DATA_DIR. With named API keys a socket hears only the prompts
 * of the key it connected with: sockets are found by (key name, client id), so another key's client id reaches
 * nothing of yours.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { WebSocket } from 'ws';
import type { PromptHeartbeat } from '../../contracts/activities.ts';
import type { Logger } from '../../log.ts';
import { decodeFirst } from '../../operators/failure.ts';
import type { RenderResult } from '../../contracts/render.ts';
import { markPolled, readPreview } from '../../progress/previews.ts';
import { failureEvent, historyOutputs, type PromptHistory } from './history.ts';

const { temporal } = proto;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
/** How often a watched render's heartbeat is read while its client is connected (heartbeats are ~1 s apart). */
const POLL_MS = 300;
/** ComfyUI's binary event type of a preview image (server.py BinaryEventTypes.PREVIEW_IMAGE). */
const PREVIEW_IMAGE = 1;

interface Watch {
  renderId: string;
  promptId: string;
  /** The socket room of the prompt's client (room()); undefined without a client id. */
  clientId: string | undefined;
}

/** A socket's room: its API key's name and its client id (a key's client ids are its own). */
const room = (clientId: string, owner: string | undefined): string => (owner === undefined ? clientId : `${owner}\u0000${clientId}`);

export class PromptEvents {
  private readonly sockets = new Map<string, Set<WebSocket>>();
  private readonly watched = new Map<string, Watch>();
  private closed = false;

  constructor(
    private readonly client: Client,
    private readonly history: PromptHistory,
    private readonly logger: Logger,
    /** Where the worker writes live previews (progress/previews.ts). */
    private readonly dataDir: string,
  ) {}

  /**
   * Called before a prompt is submitted: when its client's socket is open, the worker is told someone watches,
   * so the prompt asks ComfyUI for previews (they cost ComfyUI time, so only then).
   */
  expectWatcher(clientId: string | undefined, owner: string | undefined): void {
    if (clientId !== undefined && this.sockets.has(room(clientId, owner))) markPolled(this.dataDir);
  }

  /** A new socket: ComfyUI's first message, `status` with the socket's id. */
  connect(ws: WebSocket, sid: string, owner: string | undefined): void {
    const clientId = room(sid, owner);
    let set = this.sockets.get(clientId);
    if (!set) this.sockets.set(clientId, (set = new Set()));
    set.add(ws);
    ws.on('close', () => {
      set.delete(ws);
      if (set.size === 0 && this.sockets.get(clientId) === set) this.sockets.delete(clientId);
    });
    // Other client messages (feature flags) are ignored, as ComfyUI ignores all but the first.
    ws.on('message', () => undefined);
    ws.on('error', () => undefined);
    this.send(clientId, 'status', { status: { exec_info: { queue_remaining: this.watched.size } }, sid });
  }

  /** Follows a render started for a prompt until it ends (fire and forget: failures are logged). */
  watch(renderId: string, promptId: string, clientId: string | undefined, owner: string | undefined): void {
    if (this.watched.has(renderId)) return;
    const w: Watch = { renderId, promptId, clientId: clientId === undefined ? undefined : room(clientId, owner) };
    this.watched.set(renderId, w);
    this.broadcastStatus();
    void this.follow(w)
      .catch((err: unknown) => this.logger.warn({ renderId, err: (err as Error).message }, 'ComfyUI events: could not follow the render'))
      .finally(() => {
        this.watched.delete(renderId);
        this.broadcastStatus();
      });
  }

  close(): void {
    this.closed = true;
    for (const set of this.sockets.values()) for (const ws of set) ws.close();
  }

  private async follow(w: Watch): Promise<void> {
    const handle = this.client.workflow.getHandle(w.renderId);
    let done = false;
    const outcome = handle.result().then(
      (r) => ({ ok: true as const, result: r as RenderResult }),
      (err: unknown) => ({ ok: false as const, err }),
    );
    void outcome.then(() => (done = true));
    const state = { started: false, node: undefined as string | undefined, value: -1, max: -1, preview: undefined as Buffer | undefined };
    const converter = this.client.options.loadedDataConverter.payloadConverter;
    while (!done && !this.closed) {
      if (w.clientId && this.sockets.has(w.clientId)) {
        const d = await handle.describe().catch(() => undefined);
        const activity = d?.raw.pendingActivities?.find((a) => a.activityType?.name === 'runPrompt' && a.state === STARTED);
        if (activity) {
          const beat = (decodeFirst(converter, activity.heartbeatDetails) ?? {}) as Partial<PromptHeartbeat>;
          this.progress(w, state, beat);
          this.preview(w, state);
        }
      }
      await Promise.race([outcome, new Promise((r) => setTimeout(r, POLL_MS))]);
    }
    const end = await outcome;
    if (!w.clientId) return;
    this.started(w, state);
    const at = Date.now();
    if (end.ok) {
      const outputs = historyOutputs(end.result.ui, end.result.outputs);
      for (const [node, output] of Object.entries(outputs)) {
        this.send(w.clientId, 'executing', { node, display_node: node, prompt_id: w.promptId });
        this.send(w.clientId, 'executed', { node, display_node: node, output, prompt_id: w.promptId });
      }
      this.send(w.clientId, 'execution_success', { prompt_id: w.promptId, timestamp: at });
    } else {
      const f = failureEvent(w.promptId, end.err, w.renderId, at);
      this.send(w.clientId, f.event, f.data);
    }
    // ComfyUI sends `executing {node: null}` once history is written: a client reads it right after.
    await this.history.item(w.renderId).catch(() => undefined);
    this.send(w.clientId, 'executing', { node: null, prompt_id: w.promptId });
  }

  private started(w: Watch, state: { started: boolean }): void {
    if (state.started || !w.clientId) return;
    state.started = true;
    const timestamp = Date.now();
    this.send(w.clientId, 'execution_start', { prompt_id: w.promptId, timestamp });
    this.send(w.clientId, 'execution_cached', { nodes: [], prompt_id: w.promptId, timestamp });
  }

  private progress(w: Watch, state: { started: boolean; node: string | undefined; value: number; max: number }, beat: Partial<PromptHeartbeat>): void {
    this.started(w, state);
    const clientId = w.clientId!;
    // ComfyUI's own `executing {node: null}` (its prompt done) reaches the heartbeat before the outputs are
    // stored: only the render's end may tell the client its prompt is done.
    if (typeof beat.node === 'string' && beat.node !== '' && beat.node !== state.node) {
      state.node = beat.node;
      state.value = state.max = -1;
      this.send(clientId, 'executing', { node: beat.node, display_node: beat.node, prompt_id: w.promptId });
    }
    if (typeof beat.value === 'number' && typeof beat.max === 'number' && (beat.value !== state.value || beat.max !== state.max)) {
      state.value = beat.value;
      state.max = beat.max;
      this.send(clientId, 'progress', { value: beat.value, max: beat.max, prompt_id: w.promptId, node: state.node ?? null });
    }
  }

  /** The newest preview the worker wrote for this render, as a binary frame, when it is new. */
  private preview(w: Watch, state: { preview: Buffer | undefined }): void {
    const image = readPreview(this.dataDir, w.renderId);
    if (!image || (state.preview && image.equals(state.preview))) return;
    state.preview = image;
    const head = Buffer.alloc(8);
    head.writeUInt32BE(PREVIEW_IMAGE, 0);
    head.writeUInt32BE(image[0] === 0x89 ? 2 : 1, 4);
    const frame = Buffer.concat([head, image]);
    for (const ws of this.sockets.get(w.clientId!) ?? []) if (ws.readyState === ws.OPEN) ws.send(frame, { binary: true });
  }

  private broadcastStatus(): void {
    for (const clientId of this.sockets.keys()) this.send(clientId, 'status', { status: { exec_info: { queue_remaining: this.watched.size } } });
  }

  private send(clientId: string, type: string, data: unknown): void {
    const set = this.sockets.get(clientId);
    if (!set) return;
    const text = JSON.stringify({ type, data });
    for (const ws of set) if (ws.readyState === ws.OPEN) ws.send(text);
  }
}
