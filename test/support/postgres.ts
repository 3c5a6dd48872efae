/**
 * A throwaway PostgreSQL cluster for the cluster test: Debian's server binaries (apt-get install postgresql),
 * `initdb` into a temp dir, `postgres` on a free loopback port with password auth over TCP (as the Temporal
 * tools connect), durability off (test data). PostgreSQL refuses to run as root, so under root (CI) the data
 * dir belongs to the `postgres` system user the Debian package creates and the server runs as that user.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.ts';
import { waitForPort } from './s3-server.ts';

export interface TestPostgres {
  host: string;
  port: number;
  user: string;
  password: string;
  stop(): Promise<void>;
}

/** The newest /usr/lib/postgresql/<major>/bin (Debian's layout), or PG_BIN. */
export function postgresBinDir(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((d) => /^\d+$/.test(d) && existsSync(path.join(root, d, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? path.join(root, majors[0], 'bin') : undefined;
}

function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) throw new Error('running as root but there is no `postgres` user (apt-get install postgresql creates it)');
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

export async function startPostgres(opts: { user: string; password: string }): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL server binaries not found (apt-get install postgresql, or set PG_BIN)');
  const as = runAs();
  const root = mkdtempSync(path.join(os.tmpdir(), 'cd-pg-'));
  const data = path.join(root, 'data');
  const pwfile = path.join(root, 'pw');
  writeFileSync(pwfile, `${opts.password}\n`);
  if (as) {
    chownSync(root, as.uid, as.gid);
    chownSync(pwfile, as.uid, as.gid);
  }
  execFileSync(path.join(bin, 'initdb'), ['-D', data, '-U', opts.user, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-sync'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(as ?? {}),
  });
  const port = await freePort();
  const child: ChildProcess = spawn(
    path.join(bin, 'postgres'),
    [
      '-D',
      data,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${root}`,
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=300',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], ...(as ?? {}) },
  );
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
  child.stderr?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
  await waitForPort(port, child, () => out, 60_000);
  return {
    host: '127.0.0.1',
    port,
    user: opts.user,
    password: opts.password,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGINT'); // fast shutdown
        });
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
