/**
 * The pieces a benchmark runs against: the real Temporal dev server, fake ComfyUIs (in this process, or in
 * a child process via bench/fake-host.ts), and comfy-durable as a child process (test/support/service.ts).
 * Everything listens on 127.0.0.1 only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startFakeComfyUI, type FakeComfyUI, type FakeComfyUIOptions } from '../../tools/fake-comfyui/server.ts';
import { startService, type ServiceOptions, type TestService } from '../../test/support/service.ts';
import { startTestTemporal, type TestTemporal } from '../../test/support/temporal.ts';
import { descendantsOf, serviceNodePid } from './proc.ts';
import { log, sleep } from './report.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '..', '..');
const tsxCli = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Cleanups registered by whatever started something; run in reverse order, each bounded in time. */
export class Cleanups {
  private readonly fns: Array<{ what: string; fn: () => Promise<unknown> }> = [];
  add(what: string, fn: () => Promise<unknown>): void {
    this.fns.push({ what, fn });
  }
  async runAll(): Promise<void> {
    while (this.fns.length > 0) {
      const { what, fn } = this.fns.pop()!;
      try {
        await Promise.race([fn(), sleep(15_000).then(() => log(`cleanup of ${what} timed out`))]);
      } catch (e) {
        log(`cleanup of ${what} failed: ${(e as Error).message}`);
      }
    }
  }
}

export async function startTemporal(cleanups: Cleanups): Promise<{ temporal: TestTemporal; client: Client }> {
  const t0 = Date.now();
  const dir = tempDir('cd-bench-temporal-');
  const temporal = await startTestTemporal(dir);
  cleanups.add('temporal', async () => {
    await temporal.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const connection = await Connection.connect({ address: temporal.address });
  cleanups.add('temporal client', () => connection.close());
  log(`temporal dev server on ${temporal.address} (${Date.now() - t0} ms)`);
  return { temporal, client: new Client({ connection }) };
}

export async function startFake(cleanups: Cleanups, opts: FakeComfyUIOptions = {}): Promise<FakeComfyUI> {
  const dataDir = tempDir('cd-bench-fake-');
  const fake = await startFakeComfyUI({ port: 0, stepMs: 0, renderMs: 0, ...opts, dataDir });
  cleanups.add(`fake ${fake.url}`, async () => {
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return fake;
}

export interface FakeHost {
  urls: string[];
  child: ChildProcess;
}

/** N fake ComfyUIs in one child process (their CPU is then measurable apart from the bench's own). */
export async function startFakeHost(cleanups: Cleanups, count: number): Promise<FakeHost> {
  const child = spawn(process.execPath, [tsxCli, path.join(here, '..', 'fake-host.ts'), String(count)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  cleanups.add('fake host', () => killTree(child, 5_000));
  const urls = await new Promise<string[]>((resolve, reject) => {
    let buf = '';
    // It ends on the child's FAKES line or its exit; the limit only turns a hang into an error. Starting tsx on a
    // machine at load 20 took over 30 s, so the limit is far above a normal start (1–3 s).
    const timer = setTimeout(() => reject(new Error('fake host did not start within 180 s')), 180_000);
    child.stdout.on('data', (b: Buffer) => {
      buf += b.toString();
      const m = /^FAKES (.+)$/m.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(JSON.parse(m[1]!) as string[]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`fake host exited with ${code}`));
    });
  });
  return { urls, child };
}

export interface BenchService extends TestService {
  /** pid of the node process that runs front + worker (tsx's child). */
  nodePid: number;
}

export async function startBenchService(cleanups: Cleanups, opts: ServiceOptions): Promise<BenchService> {
  const t0 = Date.now();
  const dataDir = tempDir('cd-bench-data-');
  cleanups.add('service data dir', async () => rmSync(dataDir, { recursive: true, force: true }));
  const svc = await startService({
    mode: 'start',
    dataDir,
    runtime: benchRuntime(),
    ...opts,
    env: {
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      // e.g. BENCH_SERVICE_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the service.
      ...(process.env.BENCH_SERVICE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVICE_NODE_OPTIONS } : {}),
      ...opts.env,
    },
  });
  const wrapper = svc.child;
  cleanups.add('service', () => killTree(wrapper, 8_000));
  const nodePid = serviceNodePid(wrapper.pid!);
  log(`service on ${svc.url} (wrapper pid ${wrapper.pid}, node pid ${nodePid}, ${Date.now() - t0} ms)`);
  return Object.assign(svc, { nodePid });
}

/**
 * How the service runs: `dist` (default) is `npm start`'s path, plain node on the compiled JavaScript (the
 * runner builds it first); BENCH_RUNTIME=tsx runs the TypeScript through tsx's loader, as the tests do.
 */
export function benchRuntime(): 'tsx' | 'dist' {
  return process.env.BENCH_RUNTIME === 'tsx' ? 'tsx' : 'dist';
}

/** `npm start`'s build (scripts/build.sh): a no-op when dist/ is newer than every source. */
export function buildDist(): void {
  const r = spawnSync('bash', [path.join(ROOT, 'scripts', 'build.sh')], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`scripts/build.sh failed with ${r.status ?? r.signal}`);
}

/** SIGTERM the process and its descendants (pids we started), SIGKILL whatever is left after `graceMs`. */
export async function killTree(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const pids = [child.pid, ...descendantsOf(child.pid)];
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  for (const p of pids.slice().reverse()) safeKill(p, 'SIGTERM');
  await Promise.race([exited, sleep(graceMs)]);
  for (const p of pids) safeKill(p, 'SIGKILL');
}

function safeKill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

export interface HttpResult {
  status: number;
  body: Buffer;
  headers: Headers;
  /** Epoch ms (sub-ms) when the request was sent, the headers arrived, the body was complete. */
  sentAt: number;
  headersAt: number;
  doneAt: number;
}

export async function postJson(url: string, body: string, signal?: AbortSignal, headers: Record<string, string> = {}): Promise<HttpResult> {
  const sentAt = performance.timeOrigin + performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, ...(signal ? { signal } : {}) });
  const headersAt = performance.timeOrigin + performance.now();
  const buf = Buffer.from(await res.arrayBuffer());
  const doneAt = performance.timeOrigin + performance.now();
  return { status: res.status, body: buf, headers: res.headers, sentAt, headersAt, doneAt };
}

export async function setFaults(fakeUrl: string, faults: unknown): Promise<void> {
  const res = await fetch(`${fakeUrl}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) });
  if (!res.ok) throw new Error(`setting faults failed: ${res.status} ${await res.text()}`);
}
