/**
 * A backend that refused every connection mid-prompt is marked with the prompt it abandoned. Coming back after
 * a restart (queue empty) it is simply healthy again; coming back still holding the prompt (it was only out of
 * reach) the prompt is cancelled there first, since its item moved to another backend: rendered once.
 * Also: ComfyUnavailableError knows a refused connection from other failures.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackendHealth } from '../../src/backends/health.ts';
import type { ComfyClient } from '../../src/comfyui/client.ts';
import { ComfyUnavailableError, isConnectionRefused } from '../../src/comfyui/errors.ts';

const backend = { id: 'comfyui-0', url: 'http://127.0.0.1:9' };

function stubClient(running: string[]): { client: ComfyClient; cancelled: string[] } {
  const cancelled: string[] = [];
  const client = {
    getQueue: async () => ({ runningIds: running, pendingIds: [], running: [], pending: [] }),
    cancelJob: async (id: string) => {
      cancelled.push(id);
      return { method: 'jobs-api', cancelled: true };
    },
  } as unknown as ComfyClient;
  return { client, cancelled };
}

describe('a backend that refused connections mid-prompt', () => {
  it('restarted (prompt unknown): healthy again, nothing cancelled', async () => {
    const health = new BackendHealth(mkdtempSync(path.join(os.tmpdir(), 'cd-refused-')));
    health.markUnhealthy(backend, { reason: 'refuses connections', abandonedPromptId: 'p-1' });
    const { client, cancelled } = stubClient([]);
    expect(await health.recheck(backend, client)).toBeUndefined();
    expect(cancelled).toEqual([]);
    expect(health.get(backend)).toBeUndefined();
  });

  it('only out of reach (prompt still running): cancelled there, then healthy', async () => {
    const health = new BackendHealth(mkdtempSync(path.join(os.tmpdir(), 'cd-refused-')));
    health.markUnhealthy(backend, { reason: 'refuses connections', abandonedPromptId: 'p-2' });
    expect(health.get(backend)?.abandonedPromptId).toBe('p-2');
    const { client, cancelled } = stubClient(['p-2']);
    expect(await health.recheck(backend, client)).toBeUndefined();
    expect(cancelled).toEqual(['p-2']);
  });

  it('a refused connection is told apart from a timeout', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    expect(new ComfyUnavailableError({ url: backend.url, cause: refused }).refused).toBe(true);
    expect(new ComfyUnavailableError({ url: backend.url, cause: new TypeError('fetch failed', { cause: refused }) }).refused).toBe(true);
    expect(isConnectionRefused(new AggregateError([refused]))).toBe(true);
    const timeout = Object.assign(new Error('timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(new ComfyUnavailableError({ url: backend.url, cause: timeout }).refused).toBe(false);
  });
});
