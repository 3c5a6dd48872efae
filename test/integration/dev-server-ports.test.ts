/**
 * The embedded Temporal's start-up against busy ports. The CLI picks its HTTP API and metrics ports itself and
 * can lose one to another process between probing and binding (a CI run failed so); such a start is retried.
 * A clash on the port the operator gave is reported at once, naming the variable.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.ts';
import { findTemporalBinary } from '../../src/temporal/binary.ts';
import { portInUse, startDevServer } from '../../src/temporal/dev-server.ts';
import { freePort } from '../support/ports.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-devports-'));
const logger = createLogger('silent');
const binary = findTemporalBinary(process.env.TEMPORAL_CLI_PATH);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BIND_LINE = '{"level":"ERROR","msg":"failed listening for HTTP API on 127.0.0.1:45227: listen tcp 127.0.0.1:45227: bind: address already in use"}';

describe('embedded Temporal start-up and busy ports', () => {
  it('reads the port from the server log line', () => {
    expect(portInUse(BIND_LINE)).toBe(45227);
    expect(portInUse('some other failure')).toBeUndefined();
  });

  it('starts again when the server lost a port it picked itself', async () => {
    // A wrapper that fails the first start exactly as the CLI does when its HTTP port is taken, then runs
    // the real server.
    const marker = path.join(dir, 'first-start-done');
    const wrapper = path.join(dir, 'temporal-wrapper.sh');
    writeFileSync(wrapper, `#!/bin/sh\nif [ ! -e '${marker}' ]; then touch '${marker}'; echo '${BIND_LINE}' >&2; exit 1; fi\nexec '${binary}' "$@"\n`);
    chmodSync(wrapper, 0o755);
    const server = await startDevServer({
      binary: wrapper,
      dbFile: path.join(dir, 'retry.db'),
      port: await freePort(),
      ui: false,
      namespace: 'default',
      logger,
    });
    try {
      expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    } finally {
      await server.stop();
    }
  });

  it('fails at once, naming the variable, when the gRPC port it was given is taken', async () => {
    const blocker = net.createServer();
    const port = await new Promise<number>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as net.AddressInfo).port)));
    try {
      await expect(startDevServer({ binary, dbFile: path.join(dir, 'busy.db'), port, ui: false, namespace: 'default', logger })).rejects.toThrow(
        new RegExp(`port ${port} is already in use \\(TEMPORAL_PORT`),
      );
    } finally {
      blocker.close();
    }
  });
});
