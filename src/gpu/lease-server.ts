/**
 * The GPU entry's HTTP side (mode `gpu`). A model-swapping proxy (llama-swap) starts this process when it gives
 * the GPU to the image engine and stops it when it gives the GPU to another group. It knows only HTTP: it counts
 * the requests it proxies to an entry and never evicts an entry while one is in flight. So:
 *
 * - `GET /gpu/ready` is the proxy's start-up check: 200 once the GPU worker is connected to Temporal. It does
 *   not need ComfyUI: a ComfyUI still loading would otherwise make the proxy kill the entry at its health
 *   timeout, while a prompt attempt simply waits for ComfyUI to answer.
 * - `/gpu/lease` is held open by a front (gpu/lease-holder.ts) while renders wait or run. Through the proxy it
 *   is an in-flight request, so other groups queue behind it; and this worker takes prompts from Temporal only
 *   while at least one lease is open (`gate`), so no prompt starts on a GPU the proxy may be handing away.
 *
 * The lease answers 200 at once and then streams (text/event-stream, a comment line now and then): the
 * holder learns from the headers that the proxy has counted it, and a proxy flushes such a body as it comes.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { sameSecret } from '../auth/api-token.ts';
import { closeSilentSockets, shareConnections } from '../fair/connections.ts';
import type { Logger } from '../log.ts';

/**
 * Whether prompts may start now: some front holds a lease and the leases are not yielding the GPU (end of a
 * slice, see startLeaseServer). GpuPool hands out prompt slots only then (gatedHealth).
 */
export class LeaseGate {
  private open = 0;
  private yielding = false;
  private listeners = new Set<(held: boolean) => void>();

  held(): boolean {
    return this.open > 0 && !this.yielding;
  }

  count(): number {
    return this.open;
  }

  acquire(): () => void {
    return this.change(
      () => this.open++,
      () => {
        let released = false;
        return () => {
          if (released) return;
          released = true;
          this.change(
            () => this.open--,
            () => undefined,
          );
        };
      },
    );
  }

  /** While yielding, no prompt starts though leases are open (the running one ends, then the leases do). */
  setYielding(yielding: boolean): void {
    this.change(
      () => (this.yielding = yielding),
      () => undefined,
    );
  }

  onChange(fn: (held: boolean) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private change<T>(mutate: () => unknown, then: () => T): T {
    const before = this.held();
    mutate();
    if (this.held() !== before) for (const fn of [...this.listeners]) fn(this.held());
    return then();
  }
}

/**
 * A health view for GpuPool in which every backend is unusable while no lease is held: the pool then offers
 * Temporal no prompt slots, so prompts wait in Temporal's queue instead of starting here.
 */
export function gatedHealth<B>(health: { get(backend: B): unknown }, gate: LeaseGate): { get(backend: B): unknown } {
  return { get: (b) => (gate.held() ? health.get(b) : 'no GPU lease: the model-swapping proxy has not handed this entry the GPU for work') };
}

export interface LeaseServer {
  url: string;
  gate: LeaseGate;
  /** Readiness: set once the GPU worker is polling. */
  setReady(ready: boolean): void;
  /** Whether a prompt runs now (the pool): a slice ends only once it has. */
  setBusyProbe(busy: () => boolean): void;
  /** What `/health` says of each ComfyUI this entry serves (backend id → "up", "unreachable: …", "marked: …"). */
  setBackendsProbe(describe: () => Promise<Record<string, string>>): void;
  /** Ends every open lease and stops listening. */
  close(): Promise<void>;
}

export interface LeaseServerOptions {
  host: string;
  port: number;
  logger: Logger;
  /**
   * The secret a lease request must present. Through the proxy anyone who reaches it reaches this route, and an
   * open lease keeps the GPU from every other group, so only the front (which knows it) may hold one.
   */
  token: string;
  gate?: LeaseGate;
  /**
   * How long the leases may keep the GPU before yielding it once (GPU_LEASE_SLICE_MS): then no new prompt starts,
   * the running one ends, every lease ends with `event: yield` and its holder asks again at once. A request for
   * another group queued in the proxy meanwhile is ahead of the new lease; with none, the new lease is granted
   * at once and nothing is swapped.
   */
  sliceMs?: number;
  /** The proxy stops (it no longer accepts connections while leases were coming through it): see watchProxy. */
  onProxyStopping?: () => void;
  /** The HTTP bounds; the defaults suit every deployment, tests lower them to see them act. */
  limits?: Partial<LeaseServerLimits>;
}

export interface LeaseServerLimits {
  /** Connections shared fairly (fair/connections.ts); Node refuses at accept past twice this. */
  maxConnections: number;
  /** A socket's request headers must arrive within this; a silent socket is closed after it. */
  headersTimeoutMs: number;
}

/** Comment lines on an open lease: keep intermediaries from thinking the stream died. */
const LEASE_KEEPALIVE_MS = 15_000;
/** While a slice ends, how often the running prompt is looked at. */
const YIELD_CHECK_MS = 200;

/**
 * The lease server's own HTTP bounds (issue 27 L4: no cap, idle sockets lived 60 s). Its legitimate clients are
 * few: one lease per front and the proxy's readiness checks, each answered at once. So a few dozen connections
 * suffice; past them a newcomer that sends a request displaces the longest-idle one (fair/connections.ts), so
 * idle sockets cannot keep a lease from being answered. Headers arrive at once from a real client: a socket
 * silent for 5 s is closed.
 */
const DEFAULT_LIMITS: LeaseServerLimits = { maxConnections: 64, headersTimeoutMs: 5_000 };
/** A lease request has no body: receiving it is quick. The lease itself (the response) may last hours. */
const LEASE_REQUEST_TIMEOUT_MS = 10_000;
/** Node sweeps for the timeouts at most this far apart (its default, 30 s, let sockets live a minute). */
const LEASE_TIMEOUT_SWEEP_MS = 1_000;
/** At most one line about refused leases per window (each refusal logged alone cost 191 bytes of log). */
export const REFUSED_LOG_WINDOW_MS = 10_000;

/** The header that carries GPU_LEASE_TOKEN (not `Authorization`: the proxy's API key may need that one). */
export const LEASE_TOKEN_HEADER = 'x-gpu-lease-token';

/**
 * Every answer but a granted lease is a complete response of known length that reads none of the body, and
 * closes its connection. A proxy built on Go's ReverseProxy (llama-swap) counts a request in flight until its
 * handler returns; it flushes a response of unknown length inside the handler, and Go's server first drains up
 * to 256 KB of an unread request body there, so an unauthenticated caller trickling a body to `/gpu/ready` kept
 * the GPU from every other group for as long as the body lasted. With a Content-Length the handler returns
 * once the answer is copied, and the drain happens after the proxy stopped counting the request.
 */
function answerAndClose(req: http.IncomingMessage, res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    connection: 'close',
    ...headers,
  });
  res.end(text);
}

export async function startLeaseServer(opts: LeaseServerOptions): Promise<LeaseServer> {
  const gate = opts.gate ?? new LeaseGate();
  let ready = false;
  let busy: () => boolean = () => false;
  let backends: () => Promise<Record<string, string>> = async () => ({});
  /** Open leases and how each is released (at once when a slice ends, before its connection closes). */
  const open = new Map<http.ServerResponse, () => void>();
  const slices = sliceTimer(opts, gate, open, () => busy());
  let proxyWatch: ProxyWatch | undefined;
  const refusals = refusalLog(opts.logger, REFUSED_LOG_WINDOW_MS);
  const server = createBoundedServer({ ...DEFAULT_LIMITS, ...opts.limits }, (req, res) => {
    const route = (req.url ?? '').split('?')[0];
    const state = () => ({ ready, leases: gate.count(), prompts: gate.held() ? 'taken' : 'not taken (no lease)' });
    // The proxy's readiness check: answered at once, from memory.
    if (route === '/gpu/ready') return answerAndClose(req, res, ready ? 200 : 503, state());
    // For operators: the same, and whether each ComfyUI could run a prompt now (probed, 2 s at most each).
    if (route === '/health') {
      void backends().then(
        (comfyui) => answerAndClose(req, res, ready ? 200 : 503, { ...state(), comfyui }),
        (err: unknown) => answerAndClose(req, res, ready ? 200 : 503, { ...state(), comfyui: { error: (err as Error).message } }),
      );
      return;
    }
    if (route !== '/gpu/lease') {
      return answerAndClose(req, res, 404, { error: { message: `${route} is not served by the GPU entry (its routes: /gpu/ready, /gpu/lease)` } });
    }
    const given = req.headers[LEASE_TOKEN_HEADER];
    if (typeof given !== 'string' || !sameSecret(given, opts.token)) {
      refusals.note(req.socket.remoteAddress, given !== undefined);
      return answerAndClose(req, res, 401, { error: { message: `the GPU lease needs the ${LEASE_TOKEN_HEADER} header with GPU_LEASE_TOKEN` } });
    }
    if (!ready || slices.yielding()) {
      const why = ready ? 'the GPU entry is yielding the GPU once (end of a slice)' : 'the GPU worker is not connected yet';
      return answerAndClose(req, res, 503, { error: why }, { 'retry-after': '1' });
    }
    // The proxy forwards the client's Host unchanged: the address the front reached the proxy at.
    if (opts.onProxyStopping && req.headers.host) proxyWatch ??= watchProxy(req.headers.host, opts.onProxyStopping, opts.logger);
    const release = gate.acquire();
    open.set(res, release);
    slices.leaseOpened();
    opts.logger.info({ leases: gate.count() }, 'GPU lease taken');
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.write(': lease held\n\n');
    const keepalive = setInterval(() => res.write(': held\n\n'), LEASE_KEEPALIVE_MS);
    res.once('close', () => {
      clearInterval(keepalive);
      open.delete(res);
      release();
      opts.logger.info({ leases: gate.count() }, 'GPU lease released');
    });
    req.resume();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`,
    gate,
    setReady: (r) => {
      ready = r;
    },
    setBusyProbe: (probe) => {
      busy = probe;
    },
    setBackendsProbe: (describe) => {
      backends = describe;
    },
    close: async () => {
      ready = false;
      slices.stop();
      refusals.stop();
      proxyWatch?.stop();
      for (const res of open.keys()) res.end();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/**
 * The HTTP server with its bounds. Node applies request and headers timeouts only when given at creation, and
 * sweeps for them on its own interval; a socket that sends nothing is never swept, so it is closed separately.
 */
function createBoundedServer(limits: LeaseServerLimits, handler: http.RequestListener): http.Server {
  const sweepMs = Math.min(LEASE_TIMEOUT_SWEEP_MS, Math.max(50, Math.floor(limits.headersTimeoutMs / 2)));
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: Math.max(LEASE_REQUEST_TIMEOUT_MS, limits.headersTimeoutMs),
      keepAliveTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: sweepMs,
    },
    handler,
  );
  // Behind the proxy every connection comes from the proxy's one address: the cap is that address's share.
  shareConnections(server, { max: limits.maxConnections, perAddress: limits.maxConnections });
  // Node's own cap bounds descriptors, above the fair one so that a newcomer can still displace an idle socket.
  server.maxConnections = limits.maxConnections * 2;
  closeSilentSockets(server, limits.headersTimeoutMs + sweepMs);
  return server;
}

/**
 * Refused leases, logged at most once per window: the first refusal of a window is logged at once (an operator
 * with a wrong token sees it), the rest are counted and summed up in one line when the window ends.
 */
export function refusalLog(logger: Logger, windowMs: number): { note(remote: string | undefined, presented: boolean): void; stop(): void } {
  let windowTimer: NodeJS.Timeout | undefined;
  let unlogged = 0;
  const endWindow = (): void => {
    windowTimer = undefined;
    if (unlogged === 0) return;
    logger.warn({ refused: unlogged, windowMs }, 'GPU lease refused more times in this window: wrong or missing X-GPU-Lease-Token');
    unlogged = 0;
  };
  return {
    note: (remote, presented) => {
      if (windowTimer) {
        unlogged++;
        return;
      }
      logger.warn({ remote, presented }, 'GPU lease refused: wrong or missing X-GPU-Lease-Token');
      windowTimer = setTimeout(endWindow, windowMs);
      windowTimer.unref();
    },
    stop: () => {
      clearTimeout(windowTimer);
      endWindow();
    },
  };
}

/**
 * The slices: `sliceMs` after leases were first granted, the gate stops new prompts; once no prompt runs, every
 * lease is released and ended with `event: yield` (its holder asks again at once), and the gate opens again for
 * the next lease.
 */
function sliceTimer(opts: LeaseServerOptions, gate: LeaseGate, open: Map<http.ServerResponse, () => void>, busy: () => boolean) {
  let timer: NodeJS.Timeout | undefined;
  let yielding = false;
  const finish = (): void => {
    timer = undefined;
    if (busy()) {
      timer = setTimeout(finish, YIELD_CHECK_MS);
      return;
    }
    const ended = open.size;
    for (const [res, release] of open) {
      release();
      open.delete(res);
      res.end('event: yield\ndata: {}\n\n');
    }
    yielding = false;
    gate.setYielding(false);
    opts.logger.info({ leases: ended }, 'GPU lease slice over: leases ended so that a request queued for another group gets the GPU');
  };
  return {
    yielding: () => yielding,
    leaseOpened: (): void => {
      if (timer || !opts.sliceMs || gate.count() !== 1) return;
      timer = setTimeout(() => {
        if (gate.count() === 0) {
          timer = undefined;
          return;
        }
        yielding = true;
        gate.setYielding(true);
        finish();
      }, opts.sliceMs);
    },
    stop: (): void => {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

interface ProxyWatch {
  stop(): void;
}

/** How often the proxy's listening port is tried, and how many refusals in a row mean it is stopping. */
const PROXY_CHECK_MS = 1_000;
const PROXY_REFUSALS = 2;

/**
 * A stopping llama-swap closes its listener at once, then waits up to 30 s for the requests in flight (a lease
 * is one, for as long as renders wait) and SIGKILLs its upstreams. So a refused connection to the address the
 * leases came through is the one early sign: the entry then stops by itself, in time to stop its prompt in
 * ComfyUI and unload the models before the SIGKILL.
 */
export function watchProxy(host: string, onStopping: () => void, logger: Logger): ProxyWatch {
  const url = new URL(`http://${host}`);
  const port = Number(url.port || 80);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  let refusals = 0;
  let fired = false;
  /** Only a proxy that was seen listening can be seen stopping (not one that is simply not there yet). */
  let seen = false;
  const timer = setInterval(() => {
    const socket = net.connect({ host: hostname, port });
    socket.setTimeout(PROXY_CHECK_MS);
    socket.once('connect', () => {
      refusals = 0;
      seen = true;
      socket.destroy();
    });
    socket.once('timeout', () => socket.destroy());
    socket.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNREFUSED' || fired || !seen) return;
      if (++refusals < PROXY_REFUSALS) return;
      fired = true;
      clearInterval(timer);
      logger.warn({ proxy: host }, 'the proxy refuses connections (it is stopping or reloading): stopping the GPU entry before it is killed');
      onStopping();
    });
  }, PROXY_CHECK_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
