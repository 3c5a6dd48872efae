/**
 * Starts a fake ComfyUI (v0.33-level protocol) on a real port: HTTP routes with and without `/api`, the
 * WebSocket at `/ws` and `/api/ws`, one worker executing prompts, test controls under `/__fake/*`.
 * `close()` really stops it, so tests can "restart ComfyUI" on the same port and data dir: queue and
 * history are gone, input/ and output/ survive, temp/ is wiped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { WebSocketServer } from 'ws';
import { prepareDataDirs } from './files.ts';
import { loadRawObjectInfo } from './fixture.ts';
import type { RawObjectInfo } from './node-schema.ts';
import { registerCoreRoutes } from './routes-core.ts';
import { sgldPluginFromEnv, withSgldPlugin } from './sgld-plugin.ts';
import { registerFakeRoutes } from './routes-fake.ts';
import { registerFileRoutes, registerInternalRoutes } from './routes-files.ts';
import { FakeState } from './state.ts';

export interface FakeComfyUIOptions {
  /** Default 0: an ephemeral port (read it back from `port`). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Holds input/, output/, temp/. Default: a new directory under the OS temp dir, removed by `close()`. */
  dataDir?: string;
  /**
   * List every registered profile's model files in the loaders (fixture.ts `withProfileFiles`), as a
   * ComfyUI with them installed would. Default: on for the fixture, off for an `objectInfo` passed in.
   */
  profileFiles?: boolean;
  /** Delay per sampler step in ms (default 0). */
  stepMs?: number;
  /** Extra time per prompt in ms, spent in its first executed node (default 0). */
  renderMs?: number;
  /** Served `/object_info` (the image combos are still regenerated from input/). Default: the fixture. */
  objectInfo?: RawObjectInfo;
  /**
   * SGLang's ComfyUI plugin is installed: its recorded node classes join `/object_info` (sgld-plugin.ts).
   * Default: `FAKE_COMFYUI_SGLD_PLUGIN`, else off (the plugin absent or failed to import).
   */
  sgldPlugin?: boolean;
  /** pino level; default `LOG_LEVEL` or `warn`. */
  logLevel?: string;
}

export interface FakeComfyUI {
  /** `http://host:port`, no trailing slash. */
  url: string;
  port: number;
  host: string;
  dataDir: string;
  state: FakeState;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

// eslint-disable-next-line max-lines-per-function -- the fake's start: options, state, routes and socket in the order the server needs them
export async function startFakeComfyUI(opts: FakeComfyUIOptions = {}): Promise<FakeComfyUI> {
  const host = opts.host ?? '127.0.0.1';
  const ownDataDir = opts.dataDir === undefined;
  const dataDir = path.resolve(opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'fake-comfyui-')));
  const log = pino({ name: 'fake-comfyui', level: opts.logLevel ?? process.env.LOG_LEVEL ?? 'warn' });
  const state = new FakeState({
    dirs: prepareDataDirs(dataDir),
    objectInfo: (opts.sgldPlugin ?? sgldPluginFromEnv()) ? withSgldPlugin(opts.objectInfo ?? loadRawObjectInfo()) : (opts.objectInfo ?? loadRawObjectInfo()),
    stepMs: opts.stepMs ?? 0,
    renderMs: opts.renderMs ?? 0,
    // An object_info passed in is served as given: tests of what a ComfyUI lacks.
    profileFiles: opts.profileFiles ?? opts.objectInfo === undefined,
    log,
  });

  const app = Fastify({ logger: false, bodyLimit: 100 * 1024 * 1024, forceCloseConnections: true });
  // aiohttp's request.json()/post() ignore the content type; every route parses its own raw body.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // ComfyUI's origin-only middleware (no --enable-cors-header): blocks browser cross-site requests only.
  app.addHook('onRequest', async (req, reply) => {
    if (req.headers['sec-fetch-site'] === 'cross-site') return reply.code(403).send();
    const origin = req.headers.origin;
    const hostHeader = req.headers.host ?? '';
    if (origin && LOOPBACK.has(hostHeader.replace(/:\d+$/, ''))) {
      let originHost: string;
      try {
        originHost = new URL(origin).host;
      } catch {
        originHost = '';
      }
      if (originHost !== hostHeader) return reply.code(403).send();
    }
    return undefined;
  });
  // As recorded: an unknown route (e.g. `/jobs` without `/api`) is a 404 with an empty octet-stream body.
  app.setNotFoundHandler((_req, reply) => reply.code(404).type('application/octet-stream').send(Buffer.alloc(0)));
  app.setErrorHandler((err: { statusCode?: number; message?: string }, _req, reply) => {
    const code = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (code === 500) log.error({ err }, 'unhandled error');
    return reply
      .code(code)
      .type('text/plain; charset=utf-8')
      .send(code === 500 ? '500 Internal Server Error\n\nServer got itself in trouble' : `${code}: ${err.message ?? ''}`);
  });

  const aliased = async (scope: FastifyInstance) => {
    registerCoreRoutes(scope, state);
    registerFileRoutes(scope, state);
  };
  await app.register(aliased);
  await app.register(aliased, { prefix: '/api' });
  registerInternalRoutes(app, state);
  registerFakeRoutes(app, state);

  const wss = new WebSocketServer({ noServer: true });
  app.server.on('upgrade', (req, socket, head) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (pathname !== '/ws' && pathname !== '/api/ws') {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => state.hub.handleConnection(ws, req));
  });

  await app.listen({ port: opts.port ?? 0, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (opts.port ?? 0);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  log.info({ port, dataDir }, 'fake ComfyUI listening');

  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    host,
    dataDir,
    state,
    close() {
      closing ??= (async () => {
        await state.stop();
        for (const ws of wss.clients) ws.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
        await app.close();
        if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
