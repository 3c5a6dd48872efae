/**
 * A stand-in for llama-swap in CI (the Go module proxy refuses it, so CI cannot build it). It reproduces only the
 * behaviours recorded in docs/llama-swap-facts.md — each one below names the line it reproduces — and reads the
 * same YAML config, so the tests run the deployment guide's own config (docs/llama-swap.example.yaml) with the
 * real comfy-durable processes. It emits events (spawn, ready, stop, exit, serve, done, queued, ttl-check) that
 * tests wait on instead of sleeping.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  FORM_ROUTES,
  JSON_ROUTES,
  QUERY_ROUTES,
  delay,
  formModel,
  jsonModel,
  killGroup,
  parseStandinConfig,
  probe,
  readBody,
  splitCommand,
  type Entry,
  type Group,
  type StandinOptions,
} from './llama-swap-standin-config.ts';

export { splitCommand, type StandinOptions } from './llama-swap-standin-config.ts';

type State = 'stopped' | 'starting' | 'ready' | 'stopping';

interface Runtime {
  state: State;
  child?: ChildProcess;
  inFlight: number;
  /** Granted, about to be proxied: counted as in flight (llama-swap counts a request once it hands it out). */
  granted: number;
  admitted: number;
  /** Waiters that joined the entry's start. */
  joiners: Waiter[];
  lastUsed: number;
  started?: Promise<void>;
  exited?: Promise<void>;
  output: string;
}

export interface StandinEvent {
  type: 'spawn' | 'ready' | 'stop' | 'exit' | 'serve' | 'done' | 'queued' | 'ttl-check' | 'health-timeout' | 'unload';
  model: string;
  at: number;
  detail?: Record<string, unknown>;
}

interface Waiter {
  model: string;
  grant: () => void;
  fail: (status: number, message: string) => void;
}

export class LlamaSwapStandin extends EventEmitter {
  readonly entries: Map<string, Entry>;
  readonly groups: Map<string, Group>;
  readonly events: StandinEvent[] = [];
  private readonly aliasOf: Map<string, string>;
  private readonly rt = new Map<string, Runtime>();
  private queue: Waiter[] = [];
  private server?: http.Server;
  private ttlTimer?: NodeJS.Timeout;
  private readonly healthCheckTimeoutMs: number;
  private readonly includeAliasesInList: boolean;
  private readonly preload: string[];
  url = '';
  private readonly port: number;

  constructor(opts: StandinOptions) {
    super();
    this.port = opts.port ?? 0;
    const cfg = parseStandinConfig(opts);
    this.entries = cfg.entries;
    this.groups = cfg.groups;
    this.aliasOf = cfg.aliasOf;
    this.healthCheckTimeoutMs = cfg.healthCheckTimeoutMs;
    this.includeAliasesInList = cfg.includeAliasesInList;
    this.preload = cfg.preload;
    for (const id of this.entries.keys()) this.rt.set(id, { state: 'stopped', inFlight: 0, granted: 0, admitted: 0, joiners: [], lastUsed: 0, output: '' });
  }

  async listen(): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.ttlTimer = setInterval(() => this.ttlSweep(), 1_000);
    // docs/llama-swap-facts.md:84 — preload: a `GET /` to each listed entry at start.
    for (const id of this.preload) void this.preloadEntry(id);
    return this.url;
  }

  state(id: string): State {
    return this.rt.get(id)!.state;
  }

  inFlight(id: string): number {
    return this.rt.get(id)!.inFlight;
  }

  output(id: string): string {
    return this.rt.get(id)!.output;
  }

  /** Resolves with the first event (past or future) that matches. */
  waitFor(match: (e: StandinEvent) => boolean, fromIndex = 0): Promise<StandinEvent> {
    const seen = this.events.slice(fromIndex).find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => {
      const on = (e: StandinEvent): void => {
        if (!match(e)) return;
        this.off('event', on);
        resolve(e);
      };
      this.on('event', on);
    });
  }

  async close(): Promise<void> {
    clearInterval(this.ttlTimer);
    await Promise.all([...this.entries.keys()].map((id) => this.stop(id, this.entries.get(id)!.unloadTimeout * 1000)));
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private note(type: StandinEvent['type'], model: string, detail?: Record<string, unknown>): void {
    const e: StandinEvent = { type, model, at: Date.now(), ...(detail ? { detail } : {}) };
    this.events.push(e);
    this.emit('event', e);
  }

  private async preloadEntry(id: string): Promise<void> {
    try {
      await this.schedule(id, () => false);
      await this.forward(id, 'GET', '/', {}, Buffer.alloc(0)).catch(() => undefined);
    } catch {
      // A failed preload is only logged by llama-swap.
    }
  }

  // ---- routing (docs/llama-swap-facts.md:13-27) ----

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const route = url.pathname;
    if (req.method === 'GET' && route === '/v1/models') return this.listModels(res);
    if (req.method === 'POST' && route.startsWith('/api/models/unload')) {
      const id = decodeURIComponent(route.slice('/api/models/unload/'.length));
      const targets = id ? [this.aliasOf.get(id) ?? id] : [...this.entries.keys()];
      // docs/llama-swap-facts.md:52-53 — a manual unload waits `unloadTimeout` and not for in-flight requests.
      await Promise.all(
        targets.filter((t) => this.entries.has(t)).map((t) => (this.note('unload', t), this.stop(t, this.entries.get(t)!.unloadTimeout * 1000))),
      );
      res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
      return;
    }
    let model: string | undefined;
    let path = `${route}${url.search}`;
    let body: Buffer;
    if (route.startsWith('/upstream/')) {
      // docs/llama-swap-facts.md:18 — the longest prefix naming a model or alias; stripped, any method.
      const parts = route.slice('/upstream/'.length).split('/');
      for (let n = parts.length; n >= 1 && !model; n--) {
        const name = parts.slice(0, n).join('/');
        if (this.aliasOf.has(name)) {
          model = name;
          path = `/${parts.slice(n).join('/')}${url.search}`;
        }
      }
      body = await readBody(req);
    } else if (JSON_ROUTES.has(route) || FORM_ROUTES.has(route) || QUERY_ROUTES.has(route)) {
      body = await readBody(req);
      model = QUERY_ROUTES.has(route)
        ? (url.searchParams.get('model') ?? undefined)
        : JSON_ROUTES.has(route)
          ? jsonModel(body)
          : formModel(body, req.headers['content-type']);
    } else {
      // docs/llama-swap-facts.md:19 — Go's mux answers every other path.
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
      return;
    }
    const id = model !== undefined ? this.aliasOf.get(model) : undefined;
    if (!id) {
      // docs/llama-swap-facts.md:21
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'no model id could be identified' } }));
      return;
    }
    const r = this.rt.get(id)!;
    const entry = this.entries.get(id)!;
    // docs/llama-swap-facts.md:26-27 — per entry (aliases share it), 429 beyond.
    if (r.admitted >= entry.concurrencyLimit) {
      res.writeHead(429, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'rate_limit_error', code: 'concurrency_limit' } }));
      return;
    }
    r.admitted++;
    let gone = false;
    const cancelled = (): boolean => gone;
    res.once('close', () => {
      gone = true;
    });
    try {
      await this.schedule(id, cancelled);
    } catch (err) {
      r.admitted--;
      const e = err as { status?: number; message: string };
      if (!res.headersSent && !gone)
        res.writeHead(e.status ?? 502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: e.message } }));
      return;
    }
    r.granted--;
    if (gone) {
      r.admitted--;
      this.pump();
      return;
    }
    r.inFlight++;
    this.note('serve', id, { path });
    const finish = (): void => {
      r.inFlight--;
      r.admitted--;
      r.lastUsed = Date.now();
      this.note('done', id, { path, status: res.statusCode });
      // docs/llama-swap-facts.md:83 — the queue is walked when an entry's in-flight count drops to 0.
      if (r.inFlight === 0) this.pump();
    };
    res.once('close', finish);
    try {
      // docs/llama-swap-facts.md:22, 25 — body and Host forwarded unchanged.
      const up = await this.forward(id, req.method ?? 'GET', path, req.headers, body, res);
      res.writeHead(up.statusCode ?? 502, up.headers);
      // docs/llama-swap-facts.md:90 — a stream reaches the client as it comes.
      res.flushHeaders();
      up.pipe(res);
      up.once('error', () => res.destroy());
      up.once('aborted', () => res.destroy());
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`proxy error: ${(err as Error).message}`);
      else res.destroy();
    }
  }

  /** `client`: the response to the client; when it closes before the upstream answer ends, the upstream request is cut. */
  private forward(
    id: string,
    method: string,
    path: string,
    headers: http.IncomingHttpHeaders,
    body: Buffer,
    client?: http.ServerResponse,
  ): Promise<http.IncomingMessage> {
    const target = new URL(path, this.entries.get(id)!.proxy);
    return new Promise((resolve, reject) => {
      const up = http.request(target, { method, headers: { ...headers, 'content-length': String(body.length) }, agent: false }, resolve);
      up.once('error', reject);
      client?.once('close', () => {
        if (!client.writableFinished) up.destroy();
      });
      up.end(body);
    });
  }

  private listModels(res: http.ServerResponse): void {
    const data: Array<Record<string, unknown>> = [];
    for (const e of this.entries.values()) {
      // docs/llama-swap-facts.md:85
      if (e.unlisted) continue;
      data.push({ id: e.id, object: 'model', owned_by: 'llama-swap', meta: { llamaswap: { aliases: e.aliases } } });
      // docs/llama-swap-facts.md:23-24
      if (this.includeAliasesInList)
        for (const a of e.aliases) data.push({ id: a, object: 'model', owned_by: 'llama-swap', meta: { llamaswap: { modelID: e.id, type: 'alias' } } });
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data }));
  }

  // ---- scheduling (docs/llama-swap-facts.md:45-46, 77-83) ----

  /** Entries a start of `id` stops (docs/llama-swap-facts.md:77-79). */
  private evictionFor(id: string): string[] {
    const tg = this.entries.get(id)!.group;
    const tgc = this.groups.get(tg)!;
    return [...this.entries.values()]
      .filter((e) => e.id !== id && this.rt.get(e.id)!.state !== 'stopped')
      .filter((e) => (e.group === tg ? tgc.swap : tgc.exclusive && !this.groups.get(e.group)!.persistent))
      .map((e) => e.id);
  }

  private schedule(id: string, cancelled: () => boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        model: id,
        grant: resolve,
        fail: (status, message) => reject(Object.assign(new Error(message), { status })),
      };
      this.queue.push(w);
      // docs/llama-swap-facts.md:80-83 — a cancelled waiter leaves the queue (it never starts an entry).
      const drop = setInterval(() => {
        if (!cancelled() || !this.queue.includes(w)) return;
        this.queue = this.queue.filter((q) => q !== w);
        clearInterval(drop);
        reject(new Error('client gone'));
      }, 100);
      const done = (): void => clearInterval(drop);
      w.grant = () => (done(), resolve());
      const fail = w.fail;
      w.fail = (s, m) => (done(), fail(s, m));
      if (!this.tryProceed(w)) this.note('queued', id);
    });
  }

  private pump(): void {
    for (const w of [...this.queue]) this.tryProceed(w);
  }

  /** One waiter: served, joined to a start, started, or left queued (docs/llama-swap-facts.md:80-82). */
  private tryProceed(w: Waiter): boolean {
    const r = this.rt.get(w.model)!;
    const evict = this.evictionFor(w.model);
    const take = (): void => {
      this.queue = this.queue.filter((q) => q !== w);
    };
    if (r.state === 'ready' && evict.length === 0) {
      take();
      r.granted++;
      w.grant();
      return true;
    }
    if (r.state === 'starting') {
      take();
      r.joiners.push(w);
      return true;
    }
    if (r.state === 'stopping') return false;
    // docs/llama-swap-facts.md:45-46 — never stop an entry with requests in flight, or one starting or stopping.
    if (evict.some((e) => this.rt.get(e)!.inFlight + this.rt.get(e)!.granted > 0 || this.rt.get(e)!.state !== 'ready')) return false;
    take();
    r.joiners.push(w);
    this.swap(w.model, evict);
    return true;
  }

  private swap(id: string, evict: string[]): void {
    const r = this.rt.get(id)!;
    r.state = 'starting';
    r.started = (async () => {
      // docs/llama-swap-facts.md:52 — a swap waits `healthCheckTimeout` for each stop.
      await Promise.all(evict.map((e) => this.stop(e, this.healthCheckTimeoutMs)));
      await this.start(id);
    })();
    // docs/llama-swap-facts.md:80-83 — a start's waiters are handed the entry first, then the queue is walked.
    const settle = (err?: Error & { status?: number }): void => {
      for (const j of r.joiners.splice(0)) {
        if (err) j.fail(err.status ?? 502, err.message);
        else {
          r.granted++;
          j.grant();
        }
      }
      this.pump();
    };
    r.started.then(
      () => settle(),
      (err: Error & { status?: number }) => settle(err),
    );
  }

  private async start(id: string): Promise<void> {
    const e = this.entries.get(id)!;
    const r = this.rt.get(id)!;
    const [cmd, ...args] = splitCommand(e.cmd);
    const env = { ...process.env };
    for (const kv of e.env) {
      const i = kv.indexOf('=');
      if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
    }
    // docs/llama-swap-facts.md:47 — its own process group; docs/llama-swap-facts.md:87 — env added to ours.
    const child = spawn(cmd!, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    r.child = child;
    r.output += `--- started ${new Date().toISOString()} ---\n`;
    const keep = (b: Buffer): void => {
      r.output = (r.output + b.toString()).slice(-400_000);
      if (process.env.TEST_SERVICE_ECHO) process.stderr.write(`[${id}] ${b.toString()}`);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    r.exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    this.note('spawn', id, { pid: child.pid });
    child.once('exit', (code, signal) => {
      if (r.child !== child) return;
      // docs/llama-swap-facts.md:49-50 — only a process exit is noticed once ready.
      r.state = 'stopped';
      r.child = undefined;
      this.note('exit', id, { code, signal });
      this.pump();
    });
    // docs/llama-swap-facts.md:47-49 — polled every 1 s after 250 ms until 200, up to healthCheckTimeout.
    const deadline = Date.now() + this.healthCheckTimeoutMs;
    await delay(250);
    for (;;) {
      if (r.child !== child) throw Object.assign(new Error(`upstream command exited prematurely`), { status: 502 });
      if (await probe(new URL(e.checkEndpoint, e.proxy).href)) break;
      if (Date.now() > deadline) {
        killGroup(child, 'SIGKILL');
        this.note('health-timeout', id);
        throw Object.assign(new Error('health check timed out'), { status: 500 });
      }
      await delay(1_000);
    }
    r.state = 'ready';
    r.lastUsed = Date.now();
    this.note('ready', id);
  }

  /** docs/llama-swap-facts.md:51-54 — cmdStop, or SIGTERM to the process group; SIGKILL after `timeoutMs`. */
  private async stop(id: string, timeoutMs: number): Promise<void> {
    const r = this.rt.get(id)!;
    const child = r.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    r.state = 'stopping';
    this.note('stop', id, { inFlight: r.inFlight });
    const cmdStop = this.entries.get(id)!.cmdStop;
    if (cmdStop) {
      const [c, ...a] = splitCommand(cmdStop.split('${PID}').join(String(child.pid)));
      spawn(c!, a, { stdio: 'ignore' }).on('error', () => undefined);
    } else killGroup(child, 'SIGTERM');
    const killed = setTimeout(() => killGroup(child, 'SIGKILL'), timeoutMs);
    await r.exited;
    clearTimeout(killed);
  }

  /** docs/llama-swap-facts.md:53 — unload when nothing is in flight and the last use is older than `ttl`. */
  private ttlSweep(): void {
    for (const e of this.entries.values()) {
      const r = this.rt.get(e.id)!;
      if (e.ttl <= 0 || r.state !== 'ready') continue;
      const idleMs = Date.now() - r.lastUsed;
      this.note('ttl-check', e.id, { inFlight: r.inFlight, idleMs });
      if (r.inFlight + r.granted === 0 && idleMs > e.ttl * 1000) void this.stop(e.id, e.unloadTimeout * 1000);
    }
  }
}
