/**
 * The embedded Temporal: `temporal server start-dev` as a child process with a SQLite file under the data
 * dir, so renders survive restarts of the whole service. A real server, never an in-memory fake.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { Logger } from '../log.ts';
import { SEARCH_ATTRIBUTES } from '../contracts/search-attributes.ts';
import { clearOrphanedServer, removeServerPidFile, writeServerPidFile } from './orphan.ts';

/**
 * The sitter: a POSIX shell that runs the server and holds the read end of a pipe whose write end is this
 * process's. When this process is gone, however it ended (SIGKILL included, where no exit hook runs), the pipe
 * reaches end-of-file and the sitter stops the server with SIGTERM. A SIGTERM to the sitter is passed on; it
 * exits with the server's status.
 */
const SITTER = [
  'exec 3<&0 0</dev/null',
  '"$@" 3<&- &',
  't=$!',
  "trap 'kill -TERM $t 2>/dev/null' TERM INT HUP",
  '{ read _ <&3; kill -TERM $t 2>/dev/null; } &',
  'r=$!',
  'exec 3<&-',
  'wait $t; c=$?',
  'while kill -0 $t 2>/dev/null; do wait $t; c=$?; done',
  'kill $r 2>/dev/null',
  'exit $c',
].join('\n');

/** The sitter and the server (its own process group: spawned detached). */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

export interface DevServerOptions {
  binary: string;
  dbFile: string;
  port: number;
  /** The UI's own loopback port; default a free one, picked per start (the front proxies to it). */
  uiPort?: number;
  /** false runs it headless (tests). */
  ui: boolean;
  /** Base path the UI serves under (`--ui-public-path`), e.g. `/temporal` behind the front. */
  uiPublicPath?: string;
  namespace: string;
  ip?: string;
  logger: Logger;
  startTimeoutMs?: number;
  /**
   * Dynamic config passed as `--dynamic-config-value KEY=JSON`. Defaults to EMBEDDED_DYNAMIC_CONFIG; pass `{}`
   * for the server's stock settings (the hop probe compares both).
   */
  dynamicConfig?: Record<string, unknown>;
}

/**
 * Settings of the embedded server (docs/production.md "Temporal settings" explains each and what a production cluster
 * should set). Measured with bench/hop-probe.ts on this 2-core box.
 *
 * - The history service's queue processors read their task queues at most `MaxPollRPS` times per second
 *   per shard (default 20), and the dev server has ONE shard: every task hop (workflow task → activity task
 *   → workflow task ...) waits up to 50 ms for the transfer processor's next read. 1000 removes that quantum
 *   (a 1-activity workflow drops from ~100 ms to ~25 ms). The timer processor paces durable timers and
 *   timeouts the same way (retry back-offs, schedule-to-start), the visibility processor how soon
 *   `renders list` sees a change. Cost: under load the processors read SQLite more often; idle they still
 *   wait for notifications, so an idle server costs nothing more.
 * - Eager workflow start (the dev server's default too, spelled out): in `start` mode the front starts a render
 *   on the worker's connection with `requestEagerStart`, and the start response carries the first workflow
 *   task straight to that worker (renders/render-service.ts): one matching hop and one poll fewer per render.
 * - One task-queue partition: priority keys are honoured strictly only within a partition, and several
 *   partitions also break first-in-first-out between them (measured: 10 tasks at key 5 then 2 at key 1 start
 *   `1 5 5 1 ...` with 4 partitions, `1 1 5 5 ...` with one). A single box gains nothing from partitions.
 *   The CLI takes no per-queue constraints, so this applies to every queue of the embedded server.
 * - Fairness: within a priority key the matching service takes the renders' fairness keys (their clients,
 *   contracts/priority.ts) in turn instead of first-in-first-out, so one client's hundred waiting prompts do not
 *   stand between another client's one and the GPU (docs/fair-shares.md). A production cluster sets the same.
 */
export const EMBEDDED_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  'history.transferProcessorMaxPollRPS': 1000,
  'history.timerProcessorMaxPollRPS': 1000,
  'history.visibilityProcessorMaxPollRPS': 1000,
  'system.enableEagerWorkflowStart': true,
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  'matching.enableFairness': true,
};

export interface DevServer {
  address: string;
  /** The UI process's own address (loopback, no guard): for the front's proxy, never for links. */
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

const SA_TYPE_NAMES: Record<string, string> = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList', TEXT: 'Text', INT: 'Int', BOOL: 'Bool' };

/** The port a failed start could not bind, read from the server's own log line. */
export function portInUse(output: string): number | undefined {
  const m = /listen tcp [^\s]*:(\d+): bind: address already in use/.exec(output);
  return m ? Number(m[1]) : undefined;
}

/**
 * The CLI picks its HTTP API and metrics ports itself ("a random free port"): it probes a port, releases it
 * and binds it later, so another process on the machine can take it in between (seen in CI, with many
 * servers starting at once). Such a start is retried, since the CLI picks new ports each time (and so do
 * we for the UI's, unless given one); a clash on a port we were given (gRPC, UI) is the operator's to fix
 * and fails at once, naming it.
 */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const maxStarts = 3;
  for (let start = 1; ; start++) {
    try {
      return await startDevServerOnce(opts);
    } catch (err) {
      const port = err instanceof DevServerExited ? portInUse(err.output) : undefined;
      const ours = port === opts.port || (opts.ui && opts.uiPort !== undefined && port === opts.uiPort);
      if (port === undefined || ours || start >= maxStarts) {
        if (port !== undefined && ours) {
          throw new Error(`temporal dev server: port ${port} is already in use (TEMPORAL_PORT / TEMPORAL_UI_PORT)`, { cause: err });
        }
        throw err;
      }
      opts.logger.warn({ port, start }, 'temporal dev server lost a port it picked itself to another process; starting again');
    }
  }
}

/** A port free on loopback right now (the OS's pick); a start that loses it to another process is retried. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

class DevServerExited extends Error {
  constructor(
    readonly code: number | null,
    readonly output: string,
  ) {
    super(`temporal dev server exited with code ${code} before it was ready:\n${output}`);
  }
}

// eslint-disable-next-line max-lines-per-function -- one start of the embedded Temporal (spawn, wait for the port, health, stop on failure) over the process it spawns
async function startDevServerOnce(opts: DevServerOptions): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  // A server already on the port is this DATA_DIR's orphan (stopped) or someone else's (refused): never used.
  await clearOrphanedServer({ dbFile: opts.dbFile, host: ip === '0.0.0.0' ? '127.0.0.1' : ip, port: opts.port, logger: opts.logger });
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(opts.port),
    '--db-filename',
    path.resolve(opts.dbFile),
    '--namespace',
    opts.namespace,
    '--log-level',
    'warn',
    '--log-format',
    'json',
    // WAL with synchronous=NORMAL: every workflow task commits to SQLite, and the default rollback journal
    // with full fsync costs ~100 ms per render here (benchmarked). A process crash loses nothing with WAL;
    // only an OS crash may lose the last transactions, acceptable for the embedded single-box mode.
    '--sqlite-pragma',
    'journal_mode=WAL',
    '--sqlite-pragma',
    'synchronous=NORMAL',
  ];
  // The UI has no login and no Host check: loopback only, whatever `ip` the gRPC port uses, on a port only
  // the front knows, which serves it behind its guards (README, "Temporal Web UI").
  const uiPort = opts.ui ? (opts.uiPort ?? (await freeLoopbackPort())) : undefined;
  if (uiPort !== undefined) {
    args.push('--ui-ip', '127.0.0.1', '--ui-port', String(uiPort));
    if (opts.uiPublicPath) args.push('--ui-public-path', opts.uiPublicPath);
    // The UI would otherwise fetch a news feed from newsfeed.temporal.io with this cluster's id on every load.
    args.push('--ui-disable-news-fetch');
  } else args.push('--headless');
  for (const [key, value] of Object.entries(opts.dynamicConfig ?? EMBEDDED_DYNAMIC_CONFIG)) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  for (const key of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=${SA_TYPE_NAMES[key.type] ?? 'Keyword'}`);

  // Its own session and process group: a supervisor that stops this service with a SIGTERM to the whole process
  // group (a model-swapping proxy does) must not kill Temporal before the worker has drained; this process
  // stops it last (`stop`), or kills it when it exits (`killChild`).
  // Through a sitter (SITTER): should this process die without stopping it (a proxy's SIGKILL), the server
  // is stopped at once rather than left running until the next start.
  const child = spawn('/bin/sh', ['-c', SITTER, 'temporal-sitter', opts.binary, ...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  if (child.pid !== undefined) writeServerPidFile(opts.dbFile, child.pid, opts.port);
  // The head says why it stopped (a panic's message comes first, then a long stack); the tail says where.
  let head = '';
  let tail = '';
  let total = 0;
  const keep = (chunk: Buffer): void => {
    const text = chunk.toString();
    if (head.length < 4_000) head += text.slice(0, 4_000 - head.length);
    tail = (tail + text).slice(-8_000);
    total += text.length;
  };
  const output = (): string => (total <= tail.length ? tail : `${head}\n…\n${tail}`);
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited: number | null | undefined;
  // 'close' comes after the last of its output, which says why it stopped.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.on('exit', (code) => {
    exited = code;
    process.off('exit', killChild);
    removeServerPidFile(opts.dbFile);
  });
  // However this process ends (even process.exit on a second signal), do not leave an orphaned server
  // holding the port and the SQLite file.
  const killChild = (): void => killGroup(child, 'SIGKILL');
  process.on('exit', killChild);

  const address = `${ip}:${opts.port}`;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) {
      await Promise.race([closed, new Promise((r) => setTimeout(r, 2_000))]);
      throw new DevServerExited(exited, output());
    }
    try {
      const conn = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await conn.workflowService.getSystemInfo({});
        // The frontend can answer before the namespace exists; wait for it too.
        await conn.workflowService.describeNamespace({ namespace: opts.namespace });
      } finally {
        await conn.close();
      }
      // Only our own server counts as ready (whatever answered, it was not ours if ours has exited).
      if (exited === undefined) break;
      continue;
    } catch (err) {
      if (Date.now() > deadline) {
        killGroup(child, 'SIGKILL');
        throw new Error(`temporal dev server at ${address} not ready: ${String(err)}\n${output()}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const uiUrl = uiPort !== undefined ? `http://127.0.0.1:${uiPort}` : undefined;
  opts.logger.info({ address, uiUrl, dbFile: opts.dbFile }, 'temporal dev server ready');

  return {
    address,
    uiUrl,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited !== undefined) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => killGroup(child, 'SIGKILL'), 10_000).unref();
      }),
  };
}
