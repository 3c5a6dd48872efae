/**
 * A tiny in-process ComfyUI stand-in (node:http + ws) for the client unit tests. It keeps a queue and a
 * history with the documented shapes; tests drive execution explicitly (`start`, `progress`, `succeed`,
 * `fail`, ...), and can override any route to inject faults. Not the fake ComfyUI (tools/fake-comfyui).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface StubRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Buffer;
  headers: http.IncomingHttpHeaders;
}
export interface StubResponse {
  status: number;
  json?: unknown;
  text?: string;
  bytes?: Buffer;
  contentType?: string;
}
export type Route = (req: StubRequest) => StubResponse | undefined | Promise<StubResponse | undefined>;

interface StubPrompt {
  id: string;
  number: number;
  clientId: string | undefined;
  graph: unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class ComfyStub {
  /** Emits `change` after every request it receives and every socket that connects, so tests wait on events. */
  private readonly changes = new EventEmitter();
  /** false = ComfyUI v0.3.45..v0.5 (no `/api/jobs`). */
  jobsApi = true;
  /** false = before v0.26 (no cancel endpoints). */
  cancelApi = true;
  /** Refuse WebSocket upgrades (simulates a socket that cannot come back). */
  rejectWs = false;
  readonly requests: StubRequest[] = [];
  readonly overrides = new Map<string, Route>();
  readonly sockets = new Map<string, WebSocket>();
  readonly connectedIds: string[] = [];
  running: StubPrompt[] = [];
  pending: StubPrompt[] = [];
  history: Record<string, { prompt: unknown[]; outputs: Record<string, unknown>; status: unknown; meta: Record<string, unknown> }> = {};
  private counter = 0;
  private server!: http.Server;
  private wss!: WebSocketServer;
  url = '';

  async listen(): Promise<this> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.wss = new WebSocketServer({ noServer: true });
    this.server.on('upgrade', (req, socket, head) => {
      const u = new URL(req.url ?? '/', 'http://x');
      if (this.rejectWs || (u.pathname !== '/ws' && u.pathname !== '/api/ws')) {
        socket.write('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n');
        socket.destroy();
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const sid = u.searchParams.get('clientId') ?? Math.random().toString(16).slice(2);
        this.sockets.set(sid, ws);
        this.connectedIds.push(sid);
        this.changes.emit('change');
        ws.on('close', () => {
          if (this.sockets.get(sid) === ws) this.sockets.delete(sid);
        });
        ws.send(JSON.stringify({ type: 'status', data: { status: { exec_info: { queue_remaining: this.remaining() } }, sid } }));
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /**
   * Resolves once `condition` holds, checked now and after every request and socket connection the stub sees.
   * The time limit only turns a hang into a failure that names what was awaited; nothing is timed by it.
   */
  until(what: string, condition: () => boolean, limitMs = 30_000): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!condition()) return;
        clearTimeout(timer);
        this.changes.off('change', check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.changes.off('change', check);
        reject(new Error(`stub: still waiting for ${what} after ${limitMs} ms`));
      }, limitMs);
      this.changes.on('change', check);
    });
  }

  count(method: string, pathPrefix: string): number {
    return this.requests.filter((r) => r.method === method && r.path.startsWith(pathPrefix)).length;
  }

  remaining(): number {
    return this.running.length + this.pending.length;
  }

  send(clientId: string | undefined, type: string, data: unknown): void {
    const msg = JSON.stringify({ type, data });
    if (clientId === undefined) {
      for (const ws of this.sockets.values()) ws.send(msg);
      return;
    }
    this.sockets.get(clientId)?.send(msg);
  }

  sendBinary(clientId: string, buf: Buffer): void {
    this.sockets.get(clientId)?.send(buf);
  }

  broadcastStatus(): void {
    this.send(undefined, 'status', { status: { exec_info: { queue_remaining: this.remaining() } } });
  }

  /** Kill every socket abruptly (no close frame), like a network drop. */
  dropSockets(): void {
    for (const ws of this.wss.clients) ws.terminate();
  }

  private find(id: string): StubPrompt {
    const p = [...this.running, ...this.pending].find((x) => x.id === id);
    if (!p) throw new Error(`stub: unknown prompt ${id}`);
    return p;
  }

  /** pending → running, with `execution_start` and `execution_cached`. */
  start(id: string): void {
    const p = this.find(id);
    this.pending = this.pending.filter((x) => x !== p);
    this.running.push(p);
    const ts = Date.now();
    this.send(p.clientId, 'execution_start', { prompt_id: id, timestamp: ts });
    this.send(p.clientId, 'execution_cached', { nodes: [], prompt_id: id, timestamp: ts });
  }

  executing(id: string, node: string): void {
    const p = this.find(id);
    this.send(p.clientId, 'executing', { node, display_node: node, prompt_id: id });
  }

  progress(id: string, node: string, value: number, max: number): void {
    const p = this.find(id);
    this.send(p.clientId, 'progress', { value, max, prompt_id: id, node });
  }

  private done(id: string, outputs: Record<string, unknown>, messages: [string, Record<string, unknown>][], statusStr: string): StubPrompt {
    const p = this.find(id);
    this.running = this.running.filter((x) => x !== p);
    this.pending = this.pending.filter((x) => x !== p);
    this.history[id] = {
      prompt: [p.number, id, p.graph, { client_id: p.clientId }, ['9']],
      outputs,
      status: { status_str: statusStr, completed: statusStr === 'success', messages },
      meta: {},
    };
    return p;
  }

  /** Full success sequence: executed, execution_success, history written, executing:null, status. */
  succeed(
    id: string,
    files: { filename: string; subfolder?: string; type?: string }[] = [{ filename: 'out_00001_.png' }],
    opts: { writeHistory?: boolean } = {},
  ): void {
    const p = this.find(id);
    const ts = Date.now();
    const images = files.map((f) => ({ filename: f.filename, subfolder: f.subfolder ?? '', type: f.type ?? 'output' }));
    this.send(p.clientId, 'executing', { node: '9', display_node: '9', prompt_id: id });
    this.send(p.clientId, 'executed', { node: '9', display_node: '9', output: { images }, prompt_id: id });
    this.send(p.clientId, 'execution_success', { prompt_id: id, timestamp: ts });
    if (opts.writeHistory !== false) {
      this.done(
        id,
        { '9': { images } },
        [
          ['execution_start', { prompt_id: id, timestamp: ts - 5 }],
          ['execution_cached', { nodes: [], prompt_id: id, timestamp: ts - 5 }],
          ['execution_success', { prompt_id: id, timestamp: ts }],
        ],
        'success',
      );
    }
    this.send(p.clientId, 'executing', { node: null, prompt_id: id });
    this.broadcastStatus();
  }

  fail(id: string, err: { node_id: string; node_type: string; exception_type: string; exception_message: string }): void {
    const p = this.find(id);
    const data = { prompt_id: id, ...err, executed: ['1'], traceback: ['Traceback...'], current_inputs: {}, current_outputs: [], timestamp: Date.now() };
    this.send(p.clientId, 'execution_error', data);
    this.done(
      id,
      {},
      [
        ['execution_start', { prompt_id: id, timestamp: Date.now() }],
        ['execution_error', data],
      ],
      'error',
    );
    this.send(p.clientId, 'executing', { node: null, prompt_id: id });
    this.broadcastStatus();
  }

  interruptPrompt(id: string): void {
    const p = this.find(id);
    const data = { prompt_id: id, node_id: '3', node_type: 'KSampler', executed: [], timestamp: Date.now() };
    this.send(p.clientId, 'execution_interrupted', data);
    this.done(
      id,
      {},
      [
        ['execution_start', { prompt_id: id }],
        ['execution_interrupted', data],
      ],
      'error',
    );
    this.send(p.clientId, 'executing', { node: null, prompt_id: id });
    this.broadcastStatus();
  }

  /** Simulate a ComfyUI restart: queue and history gone. */
  restart(): void {
    this.running = [];
    this.pending = [];
    this.history = {};
    this.dropSockets();
  }

  /** Put a prompt directly into the queue (as if submitted earlier). */
  enqueue(id: string, clientId?: string): void {
    this.pending.push({ id, number: this.counter++, clientId, graph: {} });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const u = new URL(req.url ?? '/', 'http://x');
    const sreq: StubRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, body: Buffer.concat(chunks), headers: req.headers };
    this.requests.push(sreq);
    this.changes.emit('change');
    let out: StubResponse | undefined;
    const override = this.overrides.get(`${sreq.method} ${sreq.path}`) ?? this.overrides.get(`${sreq.method} *`);
    if (override) out = await override(sreq);
    out ??= this.route(sreq) ?? { status: 404, text: '404: Not Found' };
    if (out.bytes) {
      res.writeHead(out.status, { 'content-type': out.contentType ?? 'application/octet-stream' });
      res.end(out.bytes);
    } else if (out.json !== undefined) {
      res.writeHead(out.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out.json));
    } else {
      res.writeHead(out.status, { 'content-type': 'text/plain' });
      res.end(out.text ?? '');
    }
  }

  private jobOf(id: string): Record<string, unknown> | undefined {
    if (this.running.some((p) => p.id === id)) return { id, status: 'in_progress', priority: 0 };
    if (this.pending.some((p) => p.id === id)) return { id, status: 'pending', priority: 0 };
    const h = this.history[id];
    if (!h) return undefined;
    const st = h.status as { status_str: string; messages: [string, Record<string, unknown>][] };
    const interrupted = st.messages.some(([n]) => n === 'execution_interrupted');
    const err = st.messages.find(([n]) => n === 'execution_error');
    const job: Record<string, unknown> = {
      id,
      status: st.status_str === 'success' ? 'completed' : interrupted ? 'cancelled' : 'failed',
      outputs: h.outputs,
      execution_status: h.status,
    };
    if (err) job['execution_error'] = err[1];
    return job;
  }

  private route(r: StubRequest): StubResponse | undefined {
    const json = (): Record<string, unknown> => (r.body.length ? (JSON.parse(r.body.toString('utf8')) as Record<string, unknown>) : {});
    const path = r.path.startsWith('/api/') && !r.path.startsWith('/api/jobs') ? r.path.slice(4) : r.path;
    const item = (p: StubPrompt): unknown[] => [p.number, p.id, p.graph, { client_id: p.clientId }, ['9']];
    if (r.method === 'POST' && path === '/prompt') {
      const b = json();
      if (!b['prompt'])
        return {
          status: 400,
          json: { error: { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} }, node_errors: {} },
        };
      const id = b['prompt_id'];
      if (id !== undefined && (typeof id !== 'string' || !UUID.test(id))) {
        return {
          status: 400,
          json: {
            error: {
              type: 'invalid_prompt_id',
              message: 'prompt_id must be a valid UUID',
              details: 'prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one',
              extra_info: {},
            },
            node_errors: {},
          },
        };
      }
      const p: StubPrompt = { id: id ?? randomUUID(), number: this.counter++, clientId: b['client_id'] as string | undefined, graph: b['prompt'] };
      this.pending.push(p);
      this.broadcastStatus();
      return { status: 200, json: { prompt_id: p.id, number: p.number, node_errors: {} } };
    }
    if (r.method === 'GET' && path === '/queue') {
      return { status: 200, json: { queue_running: this.running.map(item), queue_pending: this.pending.map(item) } };
    }
    if (r.method === 'POST' && path === '/queue') {
      const del = json()['delete'];
      if (Array.isArray(del)) this.pending = this.pending.filter((p) => !del.includes(p.id));
      return { status: 200, text: '' };
    }
    if (r.method === 'GET' && path.startsWith('/history/')) {
      const id = decodeURIComponent(path.slice('/history/'.length));
      const h = this.history[id];
      return { status: 200, json: h ? { [id]: h } : {} };
    }
    if (r.method === 'POST' && path === '/interrupt') return { status: 200, text: '' };
    if (r.method === 'POST' && path === '/free') return { status: 200, text: '' };
    if (r.path === '/api/jobs' && r.method === 'GET') {
      if (!this.jobsApi) return undefined;
      return { status: 200, json: { jobs: [], pagination: { offset: 0, limit: 1, total: 0, has_more: false } } };
    }
    const cancel = /^\/api\/jobs\/([^/]+)\/cancel$/.exec(r.path);
    if (cancel && r.method === 'POST') {
      if (!this.jobsApi || !this.cancelApi) return undefined;
      const id = decodeURIComponent(cancel[1]!);
      const wasPending = this.pending.some((p) => p.id === id);
      this.pending = this.pending.filter((p) => p.id !== id);
      return { status: 200, json: { cancelled: wasPending || this.running.some((p) => p.id === id) } };
    }
    const job = /^\/api\/jobs\/([^/]+)$/.exec(r.path);
    if (job && r.method === 'GET') {
      if (!this.jobsApi) return undefined;
      const j = this.jobOf(decodeURIComponent(job[1]!));
      return j ? { status: 200, json: j } : { status: 404, json: { error: 'Job not found' } };
    }
    return undefined;
  }
}
