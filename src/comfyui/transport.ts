/**
 * HTTP to one ComfyUI: node's own HTTP client over a keep-alive Agent, per-call timeouts and abort signals, and
 * the mapping of transport failures and non-2xx statuses onto the error taxonomy (errors.ts), so that the
 * client's methods (client.ts) deal only with ComfyUI's answers.
 *
 * node:http rather than undici: both of `start`'s isolates (the front and the worker thread) talk to ComfyUI,
 * and undici loaded and used costs an isolate ~5 MB of heap and its llhttp WebAssembly, where node:http's
 * parser is in the binary already (bench/README.md, issue 25, sixth pass). A handful of small requests per
 * render does not need undici's speed.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { z } from 'zod';
import type { Logger } from 'pino';
import { ComfyAbortError, ComfyProtocolError, ComfyRequestError, ComfyUnavailableError } from './errors.ts';
import { MultipartForm } from './multipart.ts';
import { trimTrailingSlashes } from '../text/trim.ts';

export type ComfyLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export const noopLogger: ComfyLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  url: string;
}

/** One request as `send` writes it: `path` already carries the base path and the query. */
interface Outgoing {
  method: HttpMethod;
  path: string;
  headers: Record<string, string | number>;
  body: string | MultipartForm | undefined;
  signal: AbortSignal | undefined;
}

/** How long an idle connection is kept for the next request (a server's shorter Keep-Alive hint wins). */
const KEEP_ALIVE_MS = 30_000;

/** A request on a kept-alive connection failed before any answer: the server had just closed it (send() marks `reusedSocket`). */
function staleConnection(err: unknown): boolean {
  const e = err as { code?: unknown; reusedSocket?: unknown };
  return e.reusedSocket === true && e.code === 'ECONNRESET';
}

/** The whole body; past `maxBytes` the response is dropped and the read fails (an answer too large to hold). */
async function readAll(res: http.IncomingMessage, maxBytes = Infinity): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      res.destroy();
      throw new Error(`answer larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export class HttpTransport {
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;
  private readonly target: { protocol: string; hostname: string; port: string };
  private readonly prefix: string;
  private readonly baseUrl: string;
  private readonly logger: ComfyLogger;
  private readonly requestMs: number;
  private readonly connectMs: number;
  /** When ComfyUI last answered a request (Date.now(); 0: never). A 5xx counts as no answer (a proxy may give it). */
  lastAnsweredAt = 0;

  constructor(opts: { url: URL; logger: ComfyLogger; requestMs: number; connections: number }) {
    this.prefix = trimTrailingSlashes(opts.url.pathname);
    this.baseUrl = `${opts.url.origin}${this.prefix}`;
    this.logger = opts.logger;
    this.requestMs = opts.requestMs;
    this.connectMs = Math.min(opts.requestMs, 10_000);
    const tls = opts.url.protocol === 'https:';
    this.request = tls ? https.request : http.request;
    this.agent = new (tls ? https.Agent : http.Agent)({ keepAlive: true, maxSockets: opts.connections, timeout: KEEP_ALIVE_MS });
    // URL keeps an IPv6 host in brackets; the request wants the address alone.
    this.target = { protocol: opts.url.protocol, hostname: opts.url.hostname.replace(/^\[(.*)\]$/, '$1'), port: opts.url.port };
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }

  /**
   * One request, resolved with its response once the headers are in. A connection not made within
   * `connectMs` fails the request (a host that drops packets would otherwise hold it for the whole timeout).
   */
  private send({ method, path, headers, body, signal }: Outgoing): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = this.request({ ...this.target, method, path, headers, agent: this.agent, ...(signal ? { signal } : {}) });
      const fail = (err: unknown): void => reject(Object.assign(err as Error, { reusedSocket: req.reusedSocket }));
      req.once('socket', (socket) => {
        if (!socket.connecting) return;
        const timer = setTimeout(
          () => req.destroy(Object.assign(new Error(`connect timeout after ${this.connectMs} ms`), { code: 'ETIMEDOUT' })),
          this.connectMs,
        );
        socket.once('connect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      req.once('response', resolve);
      req.once('error', fail);
      if (body instanceof MultipartForm) pipeline(Readable.from(body.chunks()), req).catch(fail);
      else req.end(body);
    });
  }

  /** `send`, once more when a GET met a kept-alive connection the server had closed in the meantime. */
  private async sendRetryingStale(out: Outgoing): Promise<http.IncomingMessage> {
    try {
      return await this.send(out);
    } catch (e) {
      if (out.method !== 'GET' || out.signal?.aborted || !staleConnection(e)) throw e;
      return await this.send(out);
    }
  }

  async call(
    method: HttpMethod,
    path: string,
    init: CallOptions & {
      json?: unknown;
      form?: MultipartForm;
      query?: Record<string, string | undefined>;
      timeoutMs?: number;
      /** Largest body read; a larger answer fails the call. */
      maxBytes?: number;
    } = {},
  ): Promise<RawResponse> {
    const qs = init.query ? new URLSearchParams(Object.entries(init.query).filter((e): e is [string, string] => e[1] !== undefined)).toString() : '';
    const fullPath = `${this.prefix}${path}${qs ? `?${qs}` : ''}`;
    const url = `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
    if (init.signal?.aborted) throw new ComfyAbortError(init.signal.reason);
    const timeoutMs = init.timeoutMs ?? this.requestMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const headers: Record<string, string | number> = { accept: 'application/json' };
    let body: string | MultipartForm | undefined;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    } else if (init.form) {
      body = init.form;
      headers['content-type'] = init.form.contentType;
      headers['content-length'] = init.form.length;
    } else if (method !== 'GET') {
      headers['content-length'] = 0;
    }
    const started = Date.now();
    try {
      const res = await this.sendRetryingStale({ method, path: fullPath, headers, body, signal });
      const buf = await readAll(res, init.maxBytes);
      const status = res.statusCode ?? 0;
      if (status < 500) this.lastAnsweredAt = Date.now();
      this.logger.debug({ method, url, status, ms: Date.now() - started }, 'comfyui http');
      return { status, headers: res.headers, body: buf, url };
    } catch (e) {
      if (init.signal?.aborted) throw new ComfyAbortError(init.signal.reason);
      if (timeout.aborted) throw new ComfyUnavailableError({ url, message: `ComfyUI ${method} ${url} timed out after ${timeoutMs} ms`, cause: e });
      throw new ComfyUnavailableError({ url, message: `ComfyUI ${method} ${url} failed: ${(e as Error).message}`, cause: e });
    }
  }

  /**
   * A GET whose 200 body is returned as a stream (large files: videos); any other status is read and
   * mapped by `fail`. `timeoutMs` bounds the headers and each gap between body chunks, not the whole body.
   */
  async stream(
    path: string,
    init: CallOptions & { query?: Record<string, string> } = {},
  ): Promise<{ body: AsyncIterable<Uint8Array>; headers: RawResponse['headers'] }> {
    const qs = init.query ? new URLSearchParams(init.query).toString() : '';
    const fullPath = `${this.prefix}${path}${qs ? `?${qs}` : ''}`;
    const url = `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
    if (init.signal?.aborted) throw new ComfyAbortError(init.signal.reason);
    const timeoutMs = init.timeoutMs ?? this.requestMs;
    // The whole request is tied to the caller's signal; the timeout only to the wait for the headers.
    const headersTimeout = new AbortController();
    const timer = setTimeout(() => headersTimeout.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, headersTimeout.signal]) : headersTimeout.signal;
    let res: http.IncomingMessage;
    try {
      res = await this.sendRetryingStale({ method: 'GET', path: fullPath, headers: { accept: '*/*' }, body: undefined, signal });
    } catch (e) {
      if (init.signal?.aborted) throw new ComfyAbortError(init.signal.reason);
      const why = headersTimeout.signal.aborted ? `timed out after ${timeoutMs} ms` : `failed: ${(e as Error).message}`;
      throw new ComfyUnavailableError({ url, message: `ComfyUI GET ${url} ${why}`, cause: e });
    } finally {
      clearTimeout(timer);
    }
    if (res.statusCode !== 200) this.fail({ status: res.statusCode ?? 0, headers: res.headers, body: await readAll(res), url });
    // A gap of `timeoutMs` between chunks ends the body with an error (the socket's idle timeout), unless the
    // gap is the caller's: while it has not asked for the next chunk, the socket is paused for it.
    let callerWaits = false;
    res.setTimeout(timeoutMs, () => {
      if (callerWaits) res.destroy(new ComfyUnavailableError({ url, message: `ComfyUI GET ${url}: no data for ${timeoutMs} ms` }));
      else if (res.socket) res.setTimeout(timeoutMs);
    });
    const chunks = res[Symbol.asyncIterator]();
    async function* body(): AsyncGenerator<Uint8Array> {
      try {
        for (;;) {
          // The gap is counted from when the caller asks, not from the last data it left unread.
          callerWaits = true;
          // (Once the body is complete its connection has gone back to the pool: no socket, nothing to time.)
          if (res.socket) res.setTimeout(timeoutMs);
          const next = await chunks.next();
          callerWaits = false;
          if (next.done) return;
          yield next.value as Uint8Array;
        }
      } finally {
        // A caller that stops early (a size limit, an error) gives the connection up.
        await chunks.return?.();
      }
    }
    return { body: body(), headers: res.headers };
  }

  /** Map non-2xx to the error taxonomy: 4xx are our fault (not retryable), everything else is retryable. */
  fail(res: RawResponse): never {
    const text = res.body.toString('utf8');
    if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) {
      throw new ComfyRequestError({ url: res.url, status: res.status, body: text });
    }
    throw new ComfyUnavailableError({ url: res.url, status: res.status, body: text });
  }

  parse<S extends z.ZodType>(res: RawResponse, schema: S): z.output<S> {
    let raw: unknown;
    try {
      raw = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new ComfyProtocolError(res.url, `HTTP ${res.status} body is not JSON: ${res.body.toString('utf8').slice(0, 200)}`);
    }
    const r = schema.safeParse(raw);
    if (!r.success) throw new ComfyProtocolError(res.url, r.error.message.slice(0, 1000));
    return r.data;
  }

  async getJson<S extends z.ZodType>(path: string, schema: S, opts?: CallOptions & { query?: Record<string, string | undefined> }): Promise<z.output<S>> {
    const res = await this.call('GET', path, opts);
    if (res.status !== 200) this.fail(res);
    return this.parse(res, schema);
  }

  async postNoContent(path: string, json: unknown, opts?: CallOptions): Promise<void> {
    const res = await this.call('POST', path, { ...opts, json });
    if (res.status < 200 || res.status >= 300) this.fail(res);
  }
}

/** The body as JSON, or undefined when it is not JSON. */
export function safeJson(buf: Buffer): unknown {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    return undefined;
  }
}
