import { describe, expect, it } from 'vitest';
import { backendTimes, gpuQueueWait } from '../../src/metrics/backend-metrics.ts';
import { registry } from '../../src/metrics/metrics.ts';
import { GpuPool } from '../../src/backends/gpu-pool.ts';
import { metricValue } from '../faults/helpers.ts';

const backends = [
  { id: 'metrics-a', url: 'http://127.0.0.1:1' },
  { id: 'metrics-b', url: 'http://127.0.0.1:2' },
];

describe('per-backend GPU metrics', () => {
  it('the pool marks a backend busy while leased and accounts busy and idle time per backend', async () => {
    const pool = new GpuPool(backends, { get: () => undefined });
    const text = async (): Promise<string> => registry.metrics();
    expect(metricValue(await text(), 'comfy_durable_backend_busy', { backend: 'metrics-a' })).toBe(0);

    // Nothing loaded anywhere yet: the first backend is the best one.
    const lease = await pool.acquire({});
    expect(lease.backend.id).toBe('metrics-a');
    expect(metricValue(await text(), 'comfy_durable_backend_busy', { backend: 'metrics-a' })).toBe(1);
    expect(metricValue(await text(), 'comfy_durable_backend_busy', { backend: 'metrics-b' })).toBe(0);
    const whileBusy = backendTimes('metrics-a');
    await new Promise((r) => setImmediate(r));
    lease.release('m');
    expect(metricValue(await text(), 'comfy_durable_backend_busy', { backend: 'metrics-a' })).toBe(0);

    const a = backendTimes('metrics-a');
    const b = backendTimes('metrics-b');
    // a's busy time grew only while leased; b was never leased.
    expect(a.busySeconds).toBeGreaterThan(whileBusy.busySeconds);
    expect(b.busySeconds).toBe(0);
    expect(b.idleSeconds).toBeGreaterThan(0);
    const exposed = await text();
    expect(metricValue(exposed, 'comfy_durable_backend_busy_seconds_total', { backend: 'metrics-a' })).toBeGreaterThanOrEqual(a.busySeconds);
    expect(metricValue(exposed, 'comfy_durable_backend_idle_seconds_total', { backend: 'metrics-b' })).toBeGreaterThanOrEqual(b.idleSeconds);
  });

  it('queue wait is a histogram by priority key', async () => {
    gpuQueueWait.observe({ priority: '1' }, 0.2);
    gpuQueueWait.observe({ priority: '5' }, 40);
    const exposed = await registry.metrics();
    expect(metricValue(exposed, 'comfy_durable_gpu_queue_wait_seconds_count', { priority: '1' })).toBeGreaterThanOrEqual(1);
    expect(metricValue(exposed, 'comfy_durable_gpu_queue_wait_seconds_bucket', { priority: '5', le: '30' })).toBe(0);
    expect(metricValue(exposed, 'comfy_durable_gpu_queue_wait_seconds_bucket', { priority: '5', le: '60' })).toBe(1);
  });
});
