/** A real Temporal dev server per test file (SQLite file in a temp dir), never an in-memory fake. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/log.ts';
import { findTemporalBinary } from '../../src/temporal/binary.ts';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.ts';
import { freePort } from './ports.ts';

export interface TestTemporal extends DevServer {
  dbFile: string;
  port: number;
  binary: string;
  /** Stop and start again on the same port and SQLite file (restart-matrix tests). */
  restart(): Promise<void>;
}

/** `dynamicConfig`: the server's settings (default: the embedded server's own; the bench probes compare). */
export async function startTestTemporal(dir?: string, dynamicConfig?: Record<string, unknown>): Promise<TestTemporal> {
  const base = dir ?? mkdtempSync(path.join(os.tmpdir(), 'cd-temporal-'));
  const dbFile = path.join(base, 'temporal.db');
  let port = await freePort();
  const binary = findTemporalBinary(process.env.TEMPORAL_CLI_PATH);
  const logger = createLogger('warn', 'test-temporal');
  const start = () => startDevServer({ binary, dbFile, port, ui: false, namespace: 'default', logger, ...(dynamicConfig ? { dynamicConfig } : {}) });
  // freePort's pick is free only when probed: another test file starting its own servers may take it before
  // this one binds it. The first start moves to a new port then; a restart keeps its port, as a real one does.
  let started: DevServer | undefined;
  for (let attempt = 1; !started; attempt++) {
    try {
      started = await start();
    } catch (err) {
      if (attempt >= 3 || !/already in use/.test(String((err as Error).message))) throw err;
      port = await freePort();
    }
  }
  let server = started;
  const handle: TestTemporal = {
    get address() {
      return server.address;
    },
    get process() {
      return server.process;
    },
    uiUrl: undefined,
    dbFile,
    get port() {
      return port;
    },
    binary,
    stop: () => server.stop(),
    restart: async () => {
      await server.stop();
      server = await start();
    },
  };
  return handle;
}
