/**
 * A real S3-compatible server for the tests: the Versity S3 gateway (versitygw, POSIX backend) on a free
 * loopback port, storing under a temp dir, with a throwaway root key pair. Stopped (and its dir removed) by stop().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from './ports.ts';
import { toolPath } from './cluster-tools.ts';

export interface S3TestServer {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  root: string;
  stop(): Promise<void>;
}

export async function startS3Server(): Promise<S3TestServer> {
  const bin = toolPath('VERSITYGW_BIN');
  const root = mkdtempSync(path.join(os.tmpdir(), 'cd-s3-'));
  const port = await freePort();
  const accessKeyId = `test${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(18).toString('hex');
  const region = 'us-east-1';
  mkdirSync(path.join(root, 'meta'), { recursive: true });
  mkdirSync(path.join(root, 'data'), { recursive: true });
  // Object metadata (Content-Type) goes to a sidecar dir: tmpfs and some overlay filesystems refuse user xattrs.
  const child: ChildProcess = spawn(
    bin,
    [
      '--port',
      `127.0.0.1:${port}`,
      '--access',
      accessKeyId,
      '--secret',
      secretAccessKey,
      '--region',
      region,
      'posix',
      '--sidecar',
      path.join(root, 'meta'),
      path.join(root, 'data'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
  child.stderr?.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-20_000)));
  await waitForPort(port, child, () => out);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    accessKeyId,
    secretAccessKey,
    region,
    root,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        });
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Resolves once the port accepts a connection; rejects if the process exits first or after 30 s. */
export async function waitForPort(port: number, child: ChildProcess, output: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const sock = net.connect(port, '127.0.0.1');
      sock.once('connect', () => (sock.destroy(), resolve(true)));
      sock.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server on port ${port} not up after ${timeoutMs} ms:\n${output()}`);
}
