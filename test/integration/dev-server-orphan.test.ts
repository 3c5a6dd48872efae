/**
 * Red-team M5: after a crash the embedded Temporal was orphaned and the next start silently attached to it,
 * even from another DATA_DIR (another database). A service is SIGKILLed here (no exit hook runs), leaving its
 * dev server behind: a start from another DATA_DIR on that port is refused with a clear message and leaves
 * the orphan alone; a start from the same DATA_DIR stops the orphan and runs its own server.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { findTemporalBinary } from '../../src/temporal/binary.ts';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.ts';
import { freePort } from '../support/ports.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsxLoader = pathToFileURL(path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const binary = findTemporalBinary(process.env.TEMPORAL_CLI_PATH);
const logger = createLogger('silent');
const pids: number[] = [];
const servers: DevServer[] = [];

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const pid of pids) {
    try {
      // The sitters pass SIGTERM on to their server (a SIGKILL would orphan it); the pipe holders just end.
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
});

/**
 * A process that starts an embedded server on `dbFile`/`port`, says its pid, and is then SIGKILLed. With
 * `keepPipe`, a child of it (outliving it) holds the sitter's pipe open, so the server is orphaned as when the
 * service's process lingers unkillable; without, the sitter sees the service die and stops the server.
 */
async function crashLeavingServer(dbFile: string, port: number, keepPipe = true): Promise<number> {
  const script = path.join(path.dirname(dbFile), 'crashing-service.mts');
  writeFileSync(
    script,
    `import { startDevServer } from ${JSON.stringify(path.join(root, 'src/temporal/dev-server.ts'))};\n` +
      `import { createLogger } from ${JSON.stringify(path.join(root, 'src/log.ts'))};\n` +
      `const s = await startDevServer({ binary: ${JSON.stringify(binary)}, dbFile: ${JSON.stringify(dbFile)}, port: ${port}, ui: false, namespace: 'default', logger: createLogger('silent') });\n` +
      (keepPipe
        ? `import { spawn } from 'node:child_process';\nconst holder = spawn('sleep', ['600'], { stdio: [s.process.stdin, 'ignore', 'ignore'], detached: true });\nprocess.stdout.write('holder ' + holder.pid + '\\n');\n`
        : '') +
      `process.stdout.write('ready ' + s.process.pid + '\\n');\nsetInterval(() => {}, 1000);\n`,
  );
  const child = spawn(process.execPath, ['--import', tsxLoader, script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const serverPid = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const h = /holder (\d+)/.exec(out);
      if (h && !pids.includes(Number(h[1]))) pids.push(Number(h[1]));
      const m = /ready (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`crashing service exited early (${code})`)));
  });
  pids.push(serverPid);
  child.removeAllListeners('exit');
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
  return serverPid;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('an embedded Temporal orphaned by a crash', () => {
  it('another DATA_DIR is refused on its port; the same DATA_DIR stops it and starts its own', async () => {
    const dirA = mkdtempSync(path.join(os.tmpdir(), 'cd-orphan-a-'));
    const dirB = mkdtempSync(path.join(os.tmpdir(), 'cd-orphan-b-'));
    const port = await freePort();
    const orphan = await crashLeavingServer(path.join(dirA, 'temporal.db'), port);
    expect(alive(orphan)).toBe(true);

    await expect(startDevServer({ binary, dbFile: path.join(dirB, 'temporal.db'), port, ui: false, namespace: 'default', logger })).rejects.toThrow(
      /port \d+ is already in use \(TEMPORAL_PORT \/ TEMPORAL_UI_PORT\), by a server that is not this DATA_DIR's embedded Temporal/,
    );
    expect(alive(orphan)).toBe(true);

    const own = await startDevServer({ binary, dbFile: path.join(dirA, 'temporal.db'), port, ui: false, namespace: 'default', logger });
    servers.push(own);
    expect(own.process.pid).not.toBe(orphan);
    expect(alive(orphan)).toBe(false);
    expect(own.process.exitCode).toBeNull();
  }, 120_000);

  it('a service SIGKILLed (a proxy running out of patience) leaves no server behind: the sitter stops it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-orphan-c-'));
    const sitter = await crashLeavingServer(path.join(dir, 'temporal.db'), await freePort(), false);
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (alive(sitter)) return;
        clearInterval(check);
        resolve();
      }, 100);
    });
    expect(alive(sitter)).toBe(false);
  }, 120_000);
});
