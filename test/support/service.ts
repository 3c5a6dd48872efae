/**
 * Runs comfy-durable as a real child process (`src/cli/main.ts start|worker|api`) so tests drive it over
 * HTTP exactly like a client, and fault tests can SIGKILL and restart it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from './ports.ts';
import { sharedWorkflowBundle, TEST_BUNDLE_ENV } from './workflow-bundle.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/**
 * tsx's loader in the service process itself, NOT the `tsx` CLI: the CLI runs the script in a child process,
 * so SIGKILL (the crash tests) would kill only the wrapper and leave the real service running as an orphan.
 */
const tsxLoader = path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs');

export interface ServiceOptions {
  mode?: 'start' | 'worker' | 'api';
  /** Omit to run the embedded dev server (mode `start` only). */
  temporalAddress?: string;
  comfyUrl: string;
  dataDir?: string;
  port?: number;
  taskQueue?: string;
  env?: Record<string, string>;
  /** Wait for /health to be 200 (only meaningful when the front runs). */
  waitHealthy?: boolean;
  /** How long start-up may take (default 60 s for a worker, 90 s for a front). */
  readyTimeoutMs?: number;
  /**
   * `tsx` (default): the TypeScript sources through tsx's loader. `dist`: plain node on the compiled
   * JavaScript through scripts/run.sh, as `npm start` runs it (build it first: scripts/build.sh).
   */
  runtime?: 'tsx' | 'dist';
  /** Extra node flags before the script (`tsx` runtime), e.g. the V8 heap flags npm start uses. */
  nodeArgs?: string[];
  /**
   * `dist` runtime only: the checkout to run (its scripts/run.sh on its own dist/), default this one. The
   * bench's `--against <commit>` runs another commit's build under the same harness.
   */
  root?: string;
}

export interface TestService {
  url: string;
  port: number;
  dataDir: string;
  taskQueue: string;
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Start the same service again (same port, data dir and task queue). */
  restart(): Promise<void>;
}

export async function startService(opts: ServiceOptions): Promise<TestService> {
  const mode = opts.mode ?? 'start';
  let port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'cd-data-'));
  const taskQueue = opts.taskQueue ?? `renders-${Math.random().toString(36).slice(2, 10)}`;
  let out = '';
  let child!: ChildProcess;

  // Services that run workflows (start, worker) under tsx take the run's one bundle instead of building their own.
  const bundleEnv = opts.runtime !== 'dist' && mode !== 'api' ? { [TEST_BUNDLE_ENV]: await sharedWorkflowBundle() } : {};

  /**
   * A port found free may be taken before the service binds it (the OS hands it out as another connection's
   * source port meanwhile: seen as `listen EADDRINUSE` next to CPU hogs and other suites). A port this
   * function chose is chosen again then; a port the caller gave is the caller's.
   */
  const launchOnAFreePort = async (): Promise<void> => {
    for (let tries = 1; ; tries++) {
      try {
        return await launch();
      } catch (err) {
        if (opts.port !== undefined || tries >= 3 || !new RegExp(`EADDRINUSE\\b.*:${port}\\b`).test(out)) throw err;
        port = await freePort();
      }
    }
  };

  const launch = async (): Promise<void> => {
    // dist: npm start's launcher, which execs node (same pid, so SIGKILL reaches the service itself).
    const [cmd, args] =
      opts.runtime === 'dist'
        ? ['bash', [path.join(opts.root ?? root, 'scripts', 'run.sh')]]
        : [process.execPath, [...(opts.nodeArgs ?? []), '--import', pathToFileURL(tsxLoader).href, path.join(root, 'src', 'cli', 'main.ts')]];
    child = spawn(cmd, [...args, mode], {
      cwd: opts.runtime === 'dist' ? (opts.root ?? root) : root,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: opts.temporalAddress ?? '',
        COMFYUI_URL: opts.comfyUrl,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        TEMPORAL_TASK_QUEUE: taskQueue,
        ...bundleEnv,
        // A worker has no /health to poll: readiness is its 'comfy-durable ready' log line, logged at info.
        LOG_LEVEL: process.env.TEST_SERVICE_LOG_LEVEL ?? (mode === 'worker' ? 'info' : 'warn'),
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Readiness must come from THIS launch: after restart() the old output still holds the old ready line.
    let ready = false;
    let tail = '';
    const keep = (b: Buffer): void => {
      const text = b.toString();
      tail = (tail + text).slice(-4_000);
      if (tail.includes('comfy-durable ready') || tail.includes('comfy-durable listening on')) ready = true;
      out = (out + text).slice(-200_000);
      if (process.env.TEST_SERVICE_ECHO) process.stderr.write(b);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    if (mode === 'worker' || opts.waitHealthy === false) {
      // A bound, not a sleep: readiness is the log line. Generous, since bundling the workflows takes a
      // while next to a CPU hog.
      await waitFor(
        () => ready,
        opts.readyTimeoutMs ?? 180_000,
        () => out,
        child,
      );
      return;
    }
    await waitFor(
      async () => {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/health`);
          return res.status === 200;
        } catch {
          return false;
        }
      },
      opts.readyTimeoutMs ?? 180_000,
      () => out,
      child,
    );
  };
  await launchOnAFreePort();

  const svc: TestService = {
    url: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    taskQueue,
    get child() {
      return child;
    },
    output: () => out,
    kill: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill(signal);
      }),
    restart: launch,
  };
  return svc;
}

async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, output: () => string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}:\n${output()}`);
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`service not ready after ${timeoutMs} ms:\n${output()}`);
}
