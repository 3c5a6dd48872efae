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
import type { AddressInfo } from 'node:net';
import { sameSecret } from '../auth/api-token.ts';
import type { Logger } from '../log.ts';

/** Whether any front holds a lease now; GpuPool hands out prompt slots only then (gatedHealth). */
export class LeaseGate {
  private open = 0;
  private listeners = new Set<(held: boolean) => void>();

  held(): boolean {
    return this.open > 0;
  }

  count(): number {
    return this.open;
  }

  acquire(): () => void {
    this.open++;
    if (this.open === 1) this.emit();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
      if (this.open === 0) this.emit();
    };
  }

  onChange(fn: (held: boolean) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(): void {
    for (const fn of [...this.listeners]) fn(this.held());
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
  /** Ends every open lease and stops listening. */
  close(): Promise<void>;
}

/** Comment lines on an open lease: keep intermediaries from thinking the stream died. */
const LEASE_KEEPALIVE_MS = 15_000;

/** The header that carries GPU_LEASE_TOKEN (not `Authorization`: the proxy's API key may need that one). */
export const LEASE_TOKEN_HEADER = 'x-gpu-lease-token';

/**
 * `token`: the secret a lease request must present. Through the proxy anyone who reaches it reaches this
 * route, and an open lease keeps the GPU from every other group, so only the front (which knows it) may hold one.
 */
export async function startLeaseServer(opts: { host: string; port: number; logger: Logger; token: string; gate?: LeaseGate }): Promise<LeaseServer> {
  const gate = opts.gate ?? new LeaseGate();
  let ready = false;
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const route = (req.url ?? '').split('?')[0];
    if (route === '/gpu/ready' || route === '/health') {
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify({ ready, leases: gate.count() }));
      return;
    }
    if (route === '/gpu/lease') {
      const given = req.headers[LEASE_TOKEN_HEADER];
      if (typeof given !== 'string' || !sameSecret(given, opts.token)) {
        opts.logger.warn({ remote: req.socket.remoteAddress, presented: given !== undefined }, 'GPU lease refused: wrong or missing X-GPU-Lease-Token');
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `the GPU lease needs the ${LEASE_TOKEN_HEADER} header with GPU_LEASE_TOKEN` } }));
        return;
      }
      if (!ready) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ error: 'the GPU worker is not connected yet' }));
        return;
      }
      const release = gate.acquire();
      open.add(res);
      opts.logger.info({ leases: gate.count() }, 'GPU lease taken');
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
      res.write(': lease held\n\n');
      const keepalive = setInterval(() => res.write(': held\n\n'), LEASE_KEEPALIVE_MS);
      const end = (): void => {
        clearInterval(keepalive);
        open.delete(res);
        release();
        opts.logger.info({ leases: gate.count() }, 'GPU lease released');
      };
      res.once('close', end);
      req.resume();
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `${route} is not served by the GPU entry (its routes: /gpu/ready, /gpu/lease)` } }));
  });
  // A lease may last hours; only the request itself is bounded.
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
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
    close: async () => {
      ready = false;
      for (const res of open) res.end();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
