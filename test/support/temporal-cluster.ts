/**
 * A real Temporal server on PostgreSQL, set up the way docker-compose.yml sets it up, from the compose file itself:
 * the `temporal-admin-tools` service's script and environment (docker/temporal/setup-postgres.sh with
 * temporal-sql-tool), the `temporal` service's environment for `temporal-server start` (what the image's
 * entrypoint runs; the server renders its embedded config template from that environment), then the
 * `temporal-create-namespace` service's script. Only host names, ports and in-container paths are mapped to this
 * machine. Binaries: scripts/setup-cluster-tools.sh (built from the Go module proxy, cached).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { findTemporalBinary } from '../../src/temporal/binary.ts';
import { deepMapStrings, environmentOf, interpolate, list, mounts, type Compose, type Service } from './compose-file.ts';
import { toolPath } from './cluster-tools.ts';
import { freeLowPort } from './ports.ts';
import type { TestPostgres } from './postgres.ts';
import { waitForPort } from './s3-server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function composeService(name: string): Service {
  const raw = parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as Compose;
  const compose = deepMapStrings(raw, (s) => interpolate(s, {})) as Compose;
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no ${name} service`);
  return s;
}

/** Where a path inside the service's container comes from on this machine (its bind mount). */
function hostPathOf(s: Service, containerPath: string): string {
  const m = mounts(s).find((x) => containerPath === x.target || containerPath.startsWith(`${x.target}/`));
  if (!m || m.named) throw new Error(`${containerPath} is not bind-mounted from the repository`);
  return path.join(ROOT, m.source, containerPath.slice(m.target.length));
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${what} exited with ${code}:\n${out.slice(-8_000)}`))));
  });
}

export interface TemporalCluster {
  address: string;
  namespace: string;
  output(): string;
  /** Stops the server process (SIGKILL = crash) and starts it again on the same database and ports. */
  restart(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

export async function startTemporalCluster(pg: TestPostgres): Promise<TemporalCluster> {
  const server = toolPath('TEMPORAL_SERVER_BIN');
  const sqlTool = toolPath('TEMPORAL_SQL_TOOL_BIN');
  const schemaRoot = toolPath('TEMPORAL_SCHEMA_DIR');
  const cli = findTemporalBinary(process.env.TEMPORAL_CLI_PATH);
  const basePath = process.env.PATH ?? '/usr/bin:/bin';

  // 1. Schema: the temporal-admin-tools job.
  const admin = composeService('temporal-admin-tools');
  const adminScript = hostPathOf(admin, list(admin.entrypoint).at(-1)!);
  await run(
    '/bin/sh',
    [adminScript],
    {
      PATH: `${path.dirname(sqlTool)}:${basePath}`,
      ...environmentOf(admin),
      POSTGRES_SEEDS: pg.host,
      DB_PORT: String(pg.port),
      POSTGRES_USER: pg.user,
      SQL_PASSWORD: pg.password,
      SCHEMA_ROOT: schemaRoot,
    },
    'setup-postgres.sh',
  );

  // 2. The server, configured by the temporal service's environment.
  const svc = composeService('temporal');
  const svcEnv = environmentOf(svc);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cd-temporal-'));
  const ports: Record<string, number> = {};
  for (const k of [
    'FRONTEND_GRPC_PORT',
    'FRONTEND_HTTP_PORT',
    'FRONTEND_MEMBERSHIP_PORT',
    'HISTORY_GRPC_PORT',
    'HISTORY_MEMBERSHIP_PORT',
    'MATCHING_GRPC_PORT',
    'MATCHING_MEMBERSHIP_PORT',
    'WORKER_GRPC_PORT',
    'WORKER_MEMBERSHIP_PORT',
    'INTERNAL_FRONTEND_GRPC_PORT',
    'INTERNAL_FRONTEND_HTTP_PORT',
    'INTERNAL_FRONTEND_MEMBERSHIP_PORT',
  ]) {
    // Below the ephemeral range (32768+), all of them: membership ports go into a smallint column, and an
    // ephemeral port probed free is soon some other test's outgoing connection (the worker service once
    // failed to bind WORKER_GRPC_PORT so, next to two CPU hogs).
    ports[k] = await freeLowPort();
  }
  // The image's working dir is /etc/temporal; DYNAMIC_CONFIG_FILE_PATH is relative to it.
  const dynamicConfig = hostPathOf(svc, path.posix.join('/etc/temporal', svcEnv.DYNAMIC_CONFIG_FILE_PATH!));
  const serverEnv: NodeJS.ProcessEnv = {
    PATH: basePath,
    HOME: process.env.HOME,
    ...svcEnv,
    POSTGRES_SEEDS: pg.host,
    DB_PORT: String(pg.port),
    POSTGRES_USER: pg.user,
    POSTGRES_PWD: pg.password,
    BIND_ON_IP: '127.0.0.1',
    DYNAMIC_CONFIG_FILE_PATH: dynamicConfig,
    LOG_LEVEL: process.env.TEMPORAL_SERVER_LOG_LEVEL ?? 'warn',
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
  const address = `127.0.0.1:${ports.FRONTEND_GRPC_PORT}`;
  let child!: ChildProcess;
  let out = '';
  const launch = async (): Promise<void> => {
    child = spawn(server, ['start'], { cwd: workDir, env: serverEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b: Buffer): void => {
      out = (out + b.toString()).slice(-100_000);
      if (process.env.TEST_SERVICE_ECHO) process.stderr.write(b);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    await waitForPort(ports.FRONTEND_GRPC_PORT!, child, () => out, 120_000);
  };
  const stopChild = (signal: NodeJS.Signals): Promise<void> =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });
  await launch();

  // 3. Namespace and search attributes: the temporal-create-namespace job (it waits for cluster health itself).
  const ns = composeService('temporal-create-namespace');
  const nsEnv = environmentOf(ns);
  const nsScript = hostPathOf(ns, list(ns.entrypoint).at(-1)!);
  try {
    await run(
      '/bin/sh',
      [nsScript],
      {
        PATH: `${path.dirname(cli)}:${basePath}`,
        HOME: process.env.HOME,
        ...nsEnv,
        TEMPORAL_ADDRESS: address,
        SETUP_SLEEP_SECONDS: '1',
        SETUP_MAX_ATTEMPTS: '120',
      },
      'create-namespace.sh',
    );
  } catch (err) {
    await stopChild('SIGKILL');
    throw new Error(`${(err as Error).message}\nserver output:\n${out.slice(-8_000)}`, { cause: err });
  }

  return {
    address,
    namespace: nsEnv.TEMPORAL_NAMESPACE!,
    output: () => out,
    restart: async (signal = 'SIGKILL') => {
      await stopChild(signal);
      await launch();
    },
    stop: async () => {
      await stopChild('SIGTERM');
      fs.rmSync(workDir, { recursive: true, force: true });
    },
  };
}
