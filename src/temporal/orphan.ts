/**
 * The embedded Temporal outlives a service that crashed (SIGKILL, OOM kill: no exit hook runs), still holding
 * its port and SQLite file. Without a check, the next start's own server failed to bind while the readiness
 * probe found the orphan answering, and silently used it, even when the orphan belonged to another DATA_DIR
 * and so ran on another database.
 *
 * So each embedded server leaves a pid file beside its database. Before starting, a server found on the
 * port is stopped when it is provably this DATA_DIR's orphan (the pid file names it, and its command line
 * names this database); any other server there is refused with a message saying what to do.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Logger } from '../log.ts';

interface PidRecord {
  pid: number;
  port: number;
  dbFile: string;
}

const pidFileFor = (dbFile: string): string => `${path.resolve(dbFile)}.server.pid`;

export function writeServerPidFile(dbFile: string, pid: number, port: number): void {
  writeFileSync(pidFileFor(dbFile), JSON.stringify({ pid, port, dbFile: path.resolve(dbFile) } satisfies PidRecord));
}

export function removeServerPidFile(dbFile: string): void {
  rmSync(pidFileFor(dbFile), { force: true });
}

function readPidFile(dbFile: string): PidRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(pidFileFor(dbFile), 'utf8')) as Partial<PidRecord>;
    return typeof r.pid === 'number' && typeof r.port === 'number' && typeof r.dbFile === 'string' ? (r as PidRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether something accepts connections on host:port now. */
export function portAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (v: boolean): void => {
      s.destroy();
      resolve(v);
    };
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    s.setTimeout(1_000, () => done(false));
  });
}

/** The process's command line names `dbFile` as its database (Linux /proc; elsewhere: unknown, so no). */
function runsOnDatabase(pid: number, dbFile: string): boolean {
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return false;
  }
  const i = argv.indexOf('--db-filename');
  return i >= 0 && argv[i + 1] === path.resolve(dbFile) && argv.includes('start-dev');
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return cond();
}

/**
 * Makes way for this DATA_DIR's embedded server on host:port: stops its own orphan, or throws when another
 * server (another DATA_DIR's, or anything else) holds the port. Nothing there: returns at once.
 */
export async function clearOrphanedServer(opts: { dbFile: string; host: string; port: number; logger: Logger }): Promise<void> {
  const rec = readPidFile(opts.dbFile);
  if (!(await portAnswers(opts.host, opts.port))) {
    // A pid file left by a crash whose server has gone too: stop it anyway if it still runs on our database.
    if (rec && alive(rec.pid) && runsOnDatabase(rec.pid, opts.dbFile)) process.kill(rec.pid, 'SIGKILL');
    return;
  }
  if (!rec || rec.port !== opts.port || !alive(rec.pid) || !runsOnDatabase(rec.pid, opts.dbFile)) {
    throw new Error(
      `temporal dev server: port ${opts.port} is already in use (TEMPORAL_PORT / TEMPORAL_UI_PORT), by a server that is not this ` +
        `DATA_DIR's embedded Temporal (${path.resolve(opts.dbFile)}): stop it, set TEMPORAL_PORT to a free port, or TEMPORAL_ADDRESS to use that server on purpose`,
    );
  }
  opts.logger.warn({ pid: rec.pid, port: opts.port, dbFile: rec.dbFile }, 'stopping the embedded Temporal a crashed run of this service left behind');
  process.kill(rec.pid, 'SIGTERM');
  if (!(await until(() => !alive(rec.pid), 10_000))) process.kill(rec.pid, 'SIGKILL');
  if (!(await until(async () => !(await portAnswers(opts.host, opts.port)), 10_000))) {
    throw new Error(`temporal dev server: the orphaned server (pid ${rec.pid}) did not release port ${opts.port}`);
  }
  removeServerPidFile(opts.dbFile);
}
