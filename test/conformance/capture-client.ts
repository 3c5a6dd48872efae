/**
 * The recording client of the capture script that recorded test/fixtures/real-comfyui/capture-real.json, ported: HTTP steps recorded the way the
 * script records them (status, content type, JSON / text / first bytes, a few headers), multipart uploads
 * encoded as aiohttp encodes them (percent-quoted file names, url-encoded when there is no file), and
 * WebSocket transcripts. Waiting is event-driven: instead of the script's sleeps, `barrier()` pings every
 * open socket, and the pong proves that every frame the server wrote before it has arrived.
 */
import { WebSocket } from 'ws';

export interface Step {
  name: string;
  [k: string]: unknown;
}

export interface Frame {
  t: number;
  kind: 'text' | 'binary' | 'text-nonjson';
  type?: unknown;
  data?: unknown;
  event_type?: number | null;
  len?: number;
  head_hex?: string;
  raw?: string;
}

export class CaptureWs {
  readonly frames: Frame[] = [];
  private ws!: WebSocket;
  private readonly t0 = Date.now();
  private listeners = new Set<() => void>();

  constructor(
    private readonly base: string,
    readonly clientId: string | null,
    private readonly sendFlags: boolean,
  ) {}

  async open(): Promise<void> {
    const url = `${this.base.replace(/^http/, 'ws')}/ws${this.clientId ? `?clientId=${this.clientId}` : ''}`;
    this.ws = new WebSocket(url);
    this.ws.on('message', (raw, isBinary) => {
      const t = Math.round(Date.now() - this.t0) / 1000;
      if (isBinary) {
        const b = Buffer.isBuffer(raw) ? raw : Buffer.concat(raw as Buffer[]);
        this.frames.push({
          t,
          kind: 'binary',
          event_type: b.length >= 4 ? b.readUInt32BE(0) : null,
          len: b.length,
          head_hex: b.subarray(0, 16).toString('hex'),
        });
      } else {
        const text = (raw as Buffer).toString();
        try {
          const j = JSON.parse(text) as { type?: unknown; data?: unknown };
          this.frames.push({ t, kind: 'text', type: j.type ?? null, data: j.data ?? null });
        } catch {
          this.frames.push({ t, kind: 'text-nonjson', raw: text.slice(0, 500) });
        }
      }
      for (const l of this.listeners) l();
    });
    await new Promise<void>((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    if (this.sendFlags) this.ws.send(JSON.stringify({ type: 'feature_flags', data: { supports_preview_metadata: true } }));
  }

  mark(): number {
    return this.frames.length;
  }

  since(m: number): Frame[] {
    return structuredClone(this.frames.slice(m));
  }

  /** Resolves when a frame from index `start` on matches; rejects after `timeoutMs` (a broken fake). */
  waitFor(pred: (f: Frame) => boolean, start = 0, timeoutMs = 20_000): Promise<Frame> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const f = this.frames.slice(start).find(pred);
        if (!f) return false;
        this.listeners.delete(onFrame);
        clearTimeout(timer);
        resolve(f);
        return true;
      };
      const onFrame = () => void check();
      const timer = setTimeout(() => {
        this.listeners.delete(onFrame);
        reject(new Error(`timed out waiting for a frame; last frames: ${JSON.stringify(this.frames.slice(-5))}`));
      }, timeoutMs);
      this.listeners.add(onFrame);
      check();
    });
  }

  /** Every frame the server sent before this call has been received once this resolves. */
  barrier(): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('pong', () => resolve());
      this.ws.ping();
    });
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

export function isText(f: Frame, type: string): f is Frame & { data: Record<string, unknown> } {
  return f.kind === 'text' && f.type === type && typeof f.data === 'object' && f.data !== null;
}

export const donePred = (pid: string) => (f: Frame) => isText(f, 'executing') && f.data.node === null && f.data.prompt_id === pid;
export const executingPred = (pid: string, node: string) => (f: Frame) => isText(f, 'executing') && f.data.node === node && f.data.prompt_id === pid;

const KEPT_HEADERS = new Set(['content-type', 'content-disposition', 'x-content-type-options', 'cache-control']);

export interface RequestOptions {
  json?: unknown;
  raw?: string;
  body?: { contentType: string; bytes: Buffer };
  keepBytes?: boolean;
}

export class CaptureHttp {
  readonly steps: Step[] = [];

  constructor(readonly base: string) {}

  /** One recorded request (`req()` in capture.py). */
  async req(name: string, method: string, path: string, o: RequestOptions = {}): Promise<Step> {
    const headers: Record<string, string> = {};
    let body: string | Buffer | undefined;
    if (o.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(o.json);
    } else if (o.raw !== undefined) {
      headers['content-type'] = 'application/json';
      body = o.raw;
    } else if (o.body) {
      headers['content-type'] = o.body.contentType;
      body = o.body.bytes;
    }
    const res = await fetch(this.base + path, { method, headers, ...(body !== undefined ? { body } : {}) });
    const bytes = Buffer.from(await res.arrayBuffer());
    const rec: Step = { name, method, path, status: res.status, content_type: res.headers.get('content-type'), len: bytes.length };
    if (o.json !== undefined) rec.request_json = o.json;
    if (o.raw !== undefined) rec.request_raw = o.raw;
    let text: string | undefined;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      text = undefined;
    }
    if (text !== undefined && !o.keepBytes) {
      try {
        rec.json = text ? JSON.parse(text) : null;
        if (text === '') rec.text = '';
      } catch {
        rec.text = text.slice(0, 2000);
      }
    } else {
      rec.head_hex = bytes.subarray(0, 16).toString('hex');
    }
    const kept: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (KEPT_HEADERS.has(k.toLowerCase())) kept[k] = v;
    });
    rec.headers = kept;
    this.steps.push(rec);
    return rec;
  }

  /** `upload()`: aiohttp's multipart form (file part first), or url-encoded fields without a file. */
  upload(name: string, filename: string | null, content: Buffer | null, fields: Record<string, string> = {}): Promise<Step> {
    if (content === null) {
      const enc = new URLSearchParams(fields).toString();
      return this.req(name, 'POST', '/upload/image', { body: { contentType: 'application/x-www-form-urlencoded', bytes: Buffer.from(enc) } });
    }
    const boundary = `capture${Math.random().toString(16).slice(2)}`;
    const parts: Buffer[] = [];
    const quote = (s: string) => encodeURIComponent(s);
    parts.push(
      Buffer.from(`--${boundary}\r\nContent-Type: image/png\r\nContent-Disposition: form-data; name="image"; filename="${quote(filename ?? '')}"\r\n\r\n`),
    );
    parts.push(content, Buffer.from('\r\n'));
    for (const [k, v] of Object.entries(fields)) {
      parts.push(Buffer.from(`--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Disposition: form-data; name="${quote(k)}"\r\n\r\n${v}\r\n`));
    }
    parts.push(Buffer.from(`--${boundary}--\r\n`));
    return this.req(name, 'POST', '/upload/image', { body: { contentType: `multipart/form-data; boundary=${boundary}`, bytes: Buffer.concat(parts) } });
  }

  /** Un-recorded GET (the script's own polling). */
  async get(path: string): Promise<unknown> {
    const res = await fetch(this.base + path);
    return res.json();
  }

  /** `drain()`: polls `/queue` (not recorded) until nothing runs or waits. */
  async drain(timeoutMs = 20_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const q = (await this.get('/queue')) as { queue_running: unknown[]; queue_pending: unknown[] };
      if (q.queue_running.length === 0 && q.queue_pending.length === 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('queue did not drain');
  }

  /** Polls `/history/{id}` (not recorded) until the prompt is there: how the script follows a prompt without client id. */
  async waitForHistory(pid: string, timeoutMs = 20_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const h = (await this.get(`/history/${pid}`)) as Record<string, unknown>;
      if (Object.keys(h).length > 0) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`prompt ${pid} never reached history`);
  }
}
