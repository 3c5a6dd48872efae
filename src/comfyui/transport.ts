/**
 * HTTP to one ComfyUI: a keep-alive undici Pool, per-call timeouts and abort signals, and the mapping of
 * transport failures and non-2xx statuses onto the error taxonomy (errors.ts), so that the client's methods
 * (client.ts) deal only with ComfyUI's answers.
 */
import { FormData, Pool } from 'undici';
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import type { Logger } from 'pino';
import { ComfyAbortError, ComfyProtocolError, ComfyRequestError, ComfyUnavailableError } from './errors.ts';
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

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  url: string;
}

export class HttpTransport {
  private readonly pool: Pool;
  private readonly prefix: string;
  private readonly baseUrl: string;
  private readonly logger: ComfyLogger;
  private readonly requestMs: number;

  constructor(opts: { url: URL; logger: ComfyLogger; requestMs: number; connections: number }) {
    this.prefix = trimTrailingSlashes(opts.url.pathname);
    this.baseUrl = `${opts.url.origin}${this.prefix}`;
    this.logger = opts.logger;
    this.requestMs = opts.requestMs;
    this.pool = new Pool(opts.url.origin, {
      connections: opts.connections,
      keepAliveTimeout: 30_000,
      connect: { timeout: Math.min(opts.requestMs, 10_000) },
    });
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  async call(
    method: Dispatcher.HttpMethod,
    path: string,
    init: CallOptions & {
      json?: unknown;
      form?: FormData;
      query?: Record<string, string | undefined>;
      timeoutMs?: number;
    } = {},
  ): Promise<RawResponse> {
    const qs = init.query ? new URLSearchParams(Object.entries(init.query).filter((e): e is [string, string] => e[1] !== undefined)).toString() : '';
    const fullPath = `${this.prefix}${path}${qs ? `?${qs}` : ''}`;
    const url = `${this.baseUrl}${path}${qs ? `?${qs}` : ''}`;
    if (init.signal?.aborted) throw new ComfyAbortError(init.signal.reason);
    const timeoutMs = init.timeoutMs ?? this.requestMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const headers: Record<string, string> = { accept: 'application/json' };
    let body: string | FormData | undefined;
    if (init.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(init.json);
    } else if (init.form) {
      body = init.form;
    }
    const started = Date.now();
    try {
      const res = await this.pool.request({ method, path: fullPath, headers, body, signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
      const buf = Buffer.from(await res.body.arrayBuffer());
      this.logger.debug({ method, url, status: res.statusCode, ms: Date.now() - started }, 'comfyui http');
      return { status: res.statusCode, headers: res.headers, body: buf, url };
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
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({
        method: 'GET',
        path: fullPath,
        headers: { accept: '*/*' },
        ...(init.signal ? { signal: init.signal } : {}),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (e) {
      if (init.signal?.aborted) throw new ComfyAbortError(init.signal.reason);
      throw new ComfyUnavailableError({ url, message: `ComfyUI GET ${url} failed: ${(e as Error).message}`, cause: e });
    }
    if (res.statusCode !== 200) this.fail({ status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()), url });
    return { body: res.body, headers: res.headers };
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
