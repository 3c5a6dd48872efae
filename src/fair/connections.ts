/**
 * Fair shares of an HTTP server's connections: the front's (issue 27 M1) and the GPU entry's lease server's
 * (issue 27 L4). A cap alone (Node's maxConnections) let a client
 * holding 1 024 idle or half-sent sockets refuse everyone else at accept. Here a connection past the cap (or
 * past its address's share) is on probation: once it sends a whole request it takes the place of the
 * connection idle longest (connected without a request in progress: an idle keep-alive socket, or one still
 * sending its headers), of its own address first when over its share; if it sends none within PROBATION_MS it
 * is closed. So a client renewing idle sockets displaces nothing (its newcomers send no request), and closing
 * one for another costs the front only when a real request arrives. A connection serving a request (a client
 * waiting for its render) is never closed for another. Node's own maxConnections, twice the cap, bounds
 * descriptors. Loopback addresses
 * share the whole cap: on one machine every local client (and a reverse proxy in front) is 127.0.0.1.
 */
import { isLoopbackHost } from '../config/loopback.ts';
import type http from 'node:http';
import type { Socket } from 'node:net';

interface Conn {
  socket: Socket;
  address: string;
  /** Requests in progress on it. */
  active: number;
  /** When it last became idle (connected, or answered its last request). */
  idleSince: number;
  /** Past the cap or its address's share: closed unless a request arrives in time. */
  probation?: NodeJS.Timeout;
  /** Its probation was for its address's share (its own idle connection makes room). */
  overShare?: boolean;
}

/** How long a connection past the cap has to send a whole request. */
const PROBATION_MS = 1_000;

export interface ConnectionShareOptions {
  /** Most connections in all (HTTP_MAX_CONNECTIONS). */
  max: number;
  /** Most connections of one remote address. */
  perAddress: number;
}

/** One address's share: a quarter of the cap, and never fewer than 16 (a browser opens six per origin). */
export function perAddressShare(max: number): number {
  return Math.max(16, Math.floor(max / 4));
}

export function shareConnections(server: http.Server, opts: ConnectionShareOptions): { open(): number; of(address: string): number } {
  const conns = new Map<Socket, Conn>();
  const byAddress = new Map<string, Set<Conn>>();
  const oldestIdle = (pool: Iterable<Conn>, except: Conn): Conn | undefined => {
    let best: Conn | undefined;
    for (const c of pool) if (c !== except && c.active === 0 && !c.probation && (!best || c.idleSince < best.idleSince)) best = c;
    return best;
  };
  const forget = (c: Conn): void => {
    conns.delete(c.socket);
    const mine = byAddress.get(c.address);
    mine?.delete(c);
    if (mine?.size === 0) byAddress.delete(c.address);
  };
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '?';
    const c: Conn = { socket, address, active: 0, idleSince: Date.now() };
    const mine = byAddress.get(address) ?? new Set<Conn>();
    byAddress.set(address, mine);
    mine.add(c);
    conns.set(socket, c);
    socket.once('close', () => {
      clearTimeout(c.probation);
      forget(c);
    });
    const overShare = mine.size > opts.perAddress && !isLoopbackHost(address);
    if (!overShare && conns.size <= opts.max) return;
    c.overShare = overShare;
    c.probation = setTimeout(() => socket.destroy(), PROBATION_MS);
    c.probation.unref();
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const c = conns.get(req.socket);
    if (!c) return;
    c.active++;
    if (c.probation) {
      // A real request: the longest-idle connection (of its own address, when over its share) makes room.
      clearTimeout(c.probation);
      c.probation = undefined;
      const victim = oldestIdle(c.overShare ? (byAddress.get(c.address) ?? []) : conns.values(), c);
      if (victim) {
        forget(victim);
        victim.socket.destroy();
      }
    }
    res.once('close', () => {
      c.active--;
      c.idleSince = Date.now();
    });
  });
  return { open: () => conns.size, of: (address) => byAddress.get(address)?.size ?? 0 };
}

/**
 * Node's headersTimeout starts with the first byte of a request: a socket that connects and sends nothing is
 * never swept. Such a socket is closed once the headers timeout (and one sweep) has passed without a request.
 * One that has sent part of its headers is left to Node's sweep, which answers it 408: closing it here too
 * raced that answer (a sweep that ran late lost it, and the client saw the connection drop unanswered).
 */
export function closeSilentSockets(server: http.Server, afterMs: number): void {
  const timers = new WeakMap<object, NodeJS.Timeout>();
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, afterMs);
    timer.unref();
    timers.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
  });
  const requestArrived = (req: http.IncomingMessage): void => {
    const timer = timers.get(req.socket);
    if (timer) {
      clearTimeout(timer);
      timers.delete(req.socket);
    }
  };
  server.on('request', requestArrived);
  // A WebSocket upgrade (ComfyUI's /ws) is a request too, and its socket lives as long as the client follows.
  server.on('upgrade', requestArrived);
}
