/**
 * What the Temporal probes (eager-probe.ts, completion-probe.ts) run on: a fresh embedded-settings dev
 * server in a temp dir, a client on its own gRPC connection and one on a NativeConnection, and the two
 * workers of the render's shape (workflows from probe-workflows.ts on `taskQueue`, activities on
 * `otherQueue`), all in this process. `stop()` undoes everything.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { EMBEDDED_DYNAMIC_CONFIG } from '../../src/temporal/dev-server.ts';
import { startTestTemporal } from '../../test/support/temporal.ts';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface ProbeStack {
  /** A client on its own gRPC connection, as another process would start workflows. */
  viaGrpc: Client;
  /** A client on the workers' NativeConnection, as `start` mode starts renders (eager start possible). */
  viaNative: Client;
  stop(): Promise<void>;
}

export async function startProbeStack(opts: {
  name: string;
  taskQueue: string;
  otherQueue: string;
  activities: Record<string, (...args: never[]) => Promise<unknown>>;
  otherQueueSlots: number;
}): Promise<ProbeStack> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = mkdtempSync(path.join(os.tmpdir(), `cd-${opts.name}-`));
  const server = await startTestTemporal(dir, { ...EMBEDDED_DYNAMIC_CONFIG });
  const native = await NativeConnection.connect({ address: server.address });
  const grpc = await Connection.connect({ address: server.address });
  const workers = [
    await Worker.create({ connection: native, taskQueue: opts.taskQueue, workflowsPath: path.join(here, 'probe-workflows.ts'), activities: opts.activities }),
    await Worker.create({
      connection: native,
      taskQueue: opts.otherQueue,
      activities: opts.activities,
      maxConcurrentActivityTaskExecutions: opts.otherQueueSlots,
    }),
  ];
  const running = workers.map((w) => w.run());
  return {
    viaGrpc: new Client({ connection: grpc }),
    viaNative: new Client({ connection: native }),
    stop: async () => {
      for (const w of workers) w.shutdown();
      await Promise.all(running);
      await native.close();
      await grpc.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
