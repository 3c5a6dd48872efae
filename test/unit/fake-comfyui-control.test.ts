/**
 * Queue control, interrupts, the jobs API, reconnects and the injected faults of the fake ComfyUI.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { httpClient, sdGraph, WsRecorder } from '../../tools/fake-comfyui/testing.ts';

let fake: FakeComfyUI;
let http: ReturnType<typeof httpClient>;
const sockets: WsRecorder[] = [];
const logLevel = process.env.LOG_LEVEL ?? 'silent';

async function ws(clientId?: string): Promise<WsRecorder> {
  const r = await WsRecorder.connect(fake.url, clientId);
  sockets.push(r);
  return r;
}

type Stats = {
  executions: Record<string, number>;
  submissions: Record<string, number>;
  queue: { running: string[]; pending: string[] };
  workerAlive: boolean;
  websocket: { registered: string[] };
};
type Job = { id: string; status: string; execution_error?: Record<string, unknown>; outputs?: unknown; workflow?: unknown; priority?: number };
type History = { status: { status_str: string; completed: boolean; messages: Array<[string, Record<string, unknown>]> }; outputs: Record<string, unknown> };

const stats = async () => (await http.get<Stats>('/__fake/stats')).json;
const faults = (body: unknown) => http.post('/__fake/faults', body);

async function until(pred: () => Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const isRunning = (id: string) => async () => (await stats()).queue.running.includes(id);

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0, logLevel });
  http = httpClient(fake.url);
});

afterAll(async () => {
  for (const s of sockets) await s.close();
  await fake.close();
});

beforeEach(async () => {
  await http.post('/__fake/reset');
});

describe('queue, interrupts and jobs', () => {
  it('queue shows running and pending items; delete removes pending only; targeted interrupt ends only the running prompt', async () => {
    const rec = await ws();
    await faults({ hang: { count: 1 } });
    const a = await http.submit(sdGraph({ seed: 1, prefix: 'qa' }), { client_id: rec.sid });
    await until(isRunning(a.prompt_id));
    const b = await http.submit(sdGraph({ seed: 2, prefix: 'qb' }));
    const c = await http.submit(sdGraph({ seed: 3, prefix: 'qc' }));

    const q = (await http.get<{ queue_running: unknown[][]; queue_pending: unknown[][] }>('/queue')).json;
    expect(q.queue_running.map((i) => i[1])).toEqual([a.prompt_id]);
    expect(q.queue_running[0]).toHaveLength(5);
    expect(q.queue_pending.map((i) => i[1]).sort()).toEqual([b.prompt_id, c.prompt_id].sort());
    expect((await http.get('/prompt')).json).toEqual({ exec_info: { queue_remaining: 3 } });
    expect((await http.get(`/history/${a.prompt_id}`)).json).toEqual({});

    // Jobs view while things are queued and running.
    expect((await http.get<Job>(`/api/jobs/${a.prompt_id}`)).json).toMatchObject({ id: a.prompt_id, status: 'in_progress', priority: a.number });
    expect((await http.get<Job>(`/api/jobs/${b.prompt_id}`)).json).toMatchObject({ id: b.prompt_id, status: 'pending' });

    expect((await http.post('/queue', { delete: [b.prompt_id, a.prompt_id] })).status).toBe(200);
    expect((await stats()).queue).toEqual({ running: [a.prompt_id], pending: [c.prompt_id] });

    // A targeted interrupt of a pending prompt does nothing; of the running one, interrupts it.
    expect((await http.post('/interrupt', { prompt_id: c.prompt_id })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 30));
    expect((await stats()).queue.running).toEqual([a.prompt_id]);
    const r = await http.post('/interrupt', { prompt_id: a.prompt_id });
    expect([r.status, r.text]).toEqual([200, '']);
    const ev = await rec.waitFor((e) => e.type === 'execution_interrupted' && e.data.prompt_id === a.prompt_id);
    expect(ev.data).toEqual({
      prompt_id: a.prompt_id,
      node_id: expect.any(String),
      node_type: expect.any(String),
      executed: [],
      timestamp: expect.any(Number),
    });
    const ha = await http.waitForHistory<History>(a.prompt_id);
    expect(ha.status.status_str).toBe('error');
    expect(ha.status.completed).toBe(false);
    expect(ha.status.messages.map((m) => m[0])).toEqual(['execution_start', 'execution_cached', 'execution_interrupted']);
    expect((await http.get<Job>(`/api/jobs/${a.prompt_id}`)).json.status).toBe('cancelled');

    const hc = await http.waitForHistory<History>(c.prompt_id);
    expect(hc.status.status_str).toBe('success');
    const cj = (await http.get<Job>(`/api/jobs/${c.prompt_id}`)).json;
    expect(cj).toMatchObject({ status: 'completed', outputs: { '9': { images: [{ filename: 'qc_00001_.png' }] } } });
    expect(cj.workflow).toMatchObject({ prompt: sdGraph({ seed: 3, prefix: 'qc' }) });

    expect((await http.get(`/api/jobs/${b.prompt_id}`)).status).toBe(404);
    expect((await http.get(`/api/jobs/${b.prompt_id}`)).json).toEqual({ error: 'Job not found' });
    const list = (await http.get<{ jobs: Job[]; pagination: Record<string, unknown> }>('/api/jobs?status=completed,cancelled&sort_order=asc')).json;
    expect(list.jobs.map((j) => [j.id, j.status])).toEqual([
      [a.prompt_id, 'cancelled'],
      [c.prompt_id, 'completed'],
    ]);
    expect(list.pagination).toEqual({ offset: 0, limit: null, total: 2, has_more: false });
    expect((await http.get('/api/jobs?status=bogus')).status).toBe(400);
    expect((await http.get('/api/jobs?limit=0')).status).toBe(400);
  });

  it('a global interrupt stops whatever runs, whoever owns it; an idle interrupt does not poison the next prompt', async () => {
    await http.post('/interrupt');
    const ok = await http.submit(sdGraph({ seed: 4 }));
    expect((await http.waitForHistory<History>(ok.prompt_id)).status.status_str).toBe('success');

    await faults({ slow: { stepMs: 40 } });
    const p = await http.submit(sdGraph({ seed: 5, steps: 50 }), { client_id: 'someone-else' });
    await until(isRunning(p.prompt_id));
    await http.post('/interrupt', 'not json');
    expect((await http.waitForHistory<History>(p.prompt_id)).status.messages.at(-1)![0]).toBe('execution_interrupted');
  });

  it('jobs cancel endpoints: running → interrupted, pending → dequeued, unknown → false; bad ids → 400', async () => {
    await faults({ hang: { count: 1 } });
    const a = await http.submit(sdGraph({ seed: 6 }));
    await until(isRunning(a.prompt_id));
    const b = await http.submit(sdGraph({ seed: 7 }));
    expect((await http.post(`/api/jobs/${b.prompt_id}/cancel`)).json).toEqual({ cancelled: true });
    expect((await stats()).queue.pending).toEqual([]);
    expect((await http.post('/api/jobs/00000000-0000-4000-8000-000000000000/cancel')).json).toEqual({ cancelled: false });
    const bad = await http.post('/api/jobs/cancel', { job_ids: ['nope'] });
    expect([bad.status, bad.json]).toEqual([400, { error: 'job_ids contains invalid id(s)', invalid_ids: ['nope'] }]);
    expect((await http.post('/api/jobs/cancel', { job_ids: [a.prompt_id] })).json).toEqual({ cancelled: true });
    expect((await http.waitForHistory<History>(a.prompt_id)).status.status_str).toBe('error');
    expect((await http.get<Job>(`/api/jobs/${a.prompt_id}`)).json.status).toBe('cancelled');
  });

  it('lower numbers run first', async () => {
    await faults({ hang: { count: 1 } });
    const blocker = await http.submit(sdGraph({ seed: 8 }));
    await until(isRunning(blocker.prompt_id));
    const late = await http.submit(sdGraph({ seed: 9 }), { number: 100 });
    const early = await http.submit(sdGraph({ seed: 10 }), { number: 50 });
    await http.post('/interrupt');
    await http.waitForHistory(late.prompt_id);
    const order = Object.keys((await http.get<Record<string, unknown>>('/history')).json);
    expect(order).toEqual([blocker.prompt_id, early.prompt_id, late.prompt_id]);
  });
});

describe('WebSocket reconnects', () => {
  it('a reconnect with the same clientId gets status and executing {node} without prompt_id', async () => {
    await faults({ hang: { count: 1, nodeClass: 'KSampler' } });
    const first = await ws('client-r');
    const { prompt_id } = await http.submit(sdGraph({ seed: 20 }), { client_id: 'client-r' });
    await first.waitFor((e) => e.type === 'executing' && e.data.node === '3');
    await first.close();
    const again = await ws('client-r');
    const ev = await again.waitFor((e) => e.type === 'executing');
    expect(ev.data).toEqual({ node: '3' });
    expect(again.events[0]!.data).toEqual({ status: { exec_info: { queue_remaining: 1 } }, sid: 'client-r' });
    await http.post('/interrupt', { prompt_id });
    await again.waitFor((e) => e.type === 'execution_interrupted');
  });

  it('reusing a clientId while the old socket is open: closing the old one silences the new one', async () => {
    const old = await ws('dup');
    const fresh = await ws('dup');
    await old.close();
    await until(async () => !(await stats()).websocket.registered.includes('dup'));
    const seen = fresh.events.length;
    const { prompt_id } = await http.submit(sdGraph({ seed: 21 }), { client_id: 'dup' });
    await http.waitForHistory(prompt_id);
    await new Promise((r) => setTimeout(r, 30));
    expect(fresh.closed).toBe(false);
    expect(fresh.events.slice(seen)).toEqual([]);
  });

  it('events for a client that is not connected are dropped, not buffered', async () => {
    const { prompt_id } = await http.submit(sdGraph({ seed: 22 }), { client_id: 'late-client' });
    await http.waitForHistory(prompt_id);
    const late = await ws('late-client');
    await new Promise((r) => setTimeout(r, 30));
    expect(late.events.map((e) => e.type)).toEqual(['status']);
  });
});

describe('fault injection', () => {
  it('validates the faults body', async () => {
    expect((await faults({ hang: { count: 0 } })).status).toBe(400);
    expect((await faults({ nope: true })).status).toBe(400);
    expect((await faults({ executionError: { type: 'oom' } })).json).toMatchObject({ executionError: { type: 'oom', node: 'first-sampler', remaining: 1 } });
  });

  it('promptHttp500: the next N submissions answer 500 without queueing; afterQueue queues first', async () => {
    await faults({ promptHttp500: { count: 2 } });
    expect((await http.post('/prompt', { prompt: sdGraph() })).status).toBe(500);
    expect((await http.post('/prompt', { prompt: sdGraph() })).status).toBe(500);
    expect((await stats()).submissions).toEqual({});
    const ok = await http.submit(sdGraph());
    await http.waitForHistory(ok.prompt_id);

    await faults({ promptHttp500: { count: 1, afterQueue: true } });
    const id = '5a1f0c62-8a0e-4c51-9f55-4f2f3b6b7c11';
    expect((await http.post('/prompt', { prompt: sdGraph({ seed: 30 }), prompt_id: id })).status).toBe(500);
    await http.waitForHistory(id);
    expect((await stats()).submissions[id]).toBe(1);
  });

  it('executionError oom at the first sampler: execution_error with the OOM text, history error, job failed', async () => {
    const rec = await ws();
    await faults({ executionError: { type: 'oom' } });
    const { prompt_id } = await http.submit(sdGraph({ seed: 31 }), { client_id: rec.sid });
    const ev = await rec.waitFor((e) => e.type === 'execution_error');
    expect(ev.data).toMatchObject({ prompt_id, node_id: '3', node_type: 'KSampler', exception_type: 'torch.OutOfMemoryError', timestamp: expect.any(Number) });
    expect(ev.data.exception_message).toBe(
      'Allocation on device \nThis error means you ran out of memory on your GPU.\n\nTIPS: If the workflow worked before you might have accidentally set the batch_size to a large number.',
    );
    expect(ev.data.current_inputs).toMatchObject({ seed: [31], steps: [4] });
    expect(Array.isArray(ev.data.traceback)).toBe(true);
    expect((ev.data.executed as string[]).sort()).toEqual(['4', '5', '6', '7']);
    await rec.waitForDone(prompt_id);
    const h = await http.waitForHistory<History>(prompt_id);
    expect(h).toMatchObject({ status: { status_str: 'error', completed: false }, outputs: {} });
    const job = (await http.get<Job>(`/api/jobs/${prompt_id}`)).json;
    expect(job.status).toBe('failed');
    expect(job.execution_error).toMatchObject({ exception_type: 'torch.OutOfMemoryError', node_id: '3' });
    // Consumed: the next prompt succeeds.
    const next = await http.submit(sdGraph({ seed: 32 }));
    expect((await http.waitForHistory<History>(next.prompt_id)).status.status_str).toBe('success');
  });

  it('executionError exception on a node class', async () => {
    await faults({ executionError: { type: 'exception', node: 'VAEDecode', message: 'boom' } });
    const { prompt_id } = await http.submit(sdGraph({ seed: 33 }));
    const h = await http.waitForHistory<History>(prompt_id);
    const err = h.status.messages.find((m) => m[0] === 'execution_error')![1];
    // As recorded: `exception_message` is str(ex), a newline, then the (empty) tips.
    expect(err).toMatchObject({ node_type: 'VAEDecode', exception_type: 'RuntimeError', exception_message: 'boom\n' });
    expect((err.traceback as string[]).length).toBeGreaterThan(4);
  });

  it('a vanished input file fails LoadImage at execution time', async () => {
    const form = new FormData();
    const png = (await import('../../tools/fake-comfyui/png.ts')).renderPng({ width: 40, height: 24, contentKey: 'in' });
    form.append('image', new Blob([png], { type: 'image/png' }), 'vanish.png');
    await fetch(`${fake.url}/upload/image`, { method: 'POST', body: form });
    await faults({ hang: { count: 1 } });
    const blocker = await http.submit(sdGraph({ seed: 34 }));
    await until(isRunning(blocker.prompt_id));
    const g = sdGraph({ seed: 35 });
    g['10'] = { class_type: 'LoadImage', inputs: { image: 'vanish.png' }, _meta: { title: 'Load' } };
    g['11'] = { class_type: 'VAEEncode', inputs: { pixels: ['10', 0], vae: ['4', 2] }, _meta: { title: 'enc' } };
    g['3']!.inputs.latent_image = ['11', 0];
    const { prompt_id } = await http.submit(g);
    rmSync(path.join(fake.dataDir, 'input', 'vanish.png'));
    await http.post('/interrupt');
    const h = await http.waitForHistory<History>(prompt_id);
    const err = h.status.messages.find((m) => m[0] === 'execution_error')![1];
    expect(err).toMatchObject({ node_id: '10', node_type: 'LoadImage', exception_type: 'FileNotFoundError' });
  });

  it('hang with ignoreInterrupt: interrupts do not take; reset recovers', async () => {
    await faults({ hang: { count: 1, ignoreInterrupt: true } });
    const { prompt_id } = await http.submit(sdGraph({ seed: 36 }));
    await until(isRunning(prompt_id));
    await http.post('/interrupt', { prompt_id });
    await http.post(`/api/jobs/${prompt_id}/cancel`);
    await new Promise((r) => setTimeout(r, 50));
    expect((await stats()).queue.running).toEqual([prompt_id]);
    expect((await http.get(`/history/${prompt_id}`)).json).toEqual({});
    await http.post('/__fake/reset');
    expect((await stats()).queue.running).toEqual([]);
    const next = await http.submit(sdGraph({ seed: 37 }));
    await http.waitForHistory(next.prompt_id);
  });

  it('workerDead: the item stays in queue_running forever, later prompts never start', async () => {
    await faults({ workerDead: true });
    const a = await http.submit(sdGraph({ seed: 38 }));
    await until(isRunning(a.prompt_id));
    const b = await http.submit(sdGraph({ seed: 39 }));
    await http.post('/interrupt');
    await new Promise((r) => setTimeout(r, 50));
    const s = await stats();
    expect(s.workerAlive).toBe(false);
    expect(s.queue).toEqual({ running: [a.prompt_id], pending: [b.prompt_id] });
    expect(s.executions).toEqual({});
    expect((await http.get<Job>(`/api/jobs/${a.prompt_id}`)).json.status).toBe('in_progress');
    await http.post('/__fake/reset');
    expect((await stats()).workerAlive).toBe(true);
  });

  it('dropWebSocket now and after N frames', async () => {
    const a = await ws();
    await faults({ dropWebSocket: {} });
    await until(async () => a.closed);
    const b = await ws();
    await faults({ dropWebSocket: { afterEvents: 3 } });
    const { prompt_id } = await http.submit(sdGraph({ seed: 40 }), { client_id: b.sid });
    await until(async () => b.closed);
    expect(b.events.length).toBe(1 + 3);
    await http.waitForHistory(prompt_id);
  });

  it('slow: per-step delay applies to sampler steps', async () => {
    await faults({ slow: { stepMs: 30 } });
    const t0 = Date.now();
    const { prompt_id } = await http.submit(sdGraph({ seed: 41, steps: 5 }));
    await http.waitForHistory(prompt_id);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('counts executions per prompt id, including duplicates of the same id', async () => {
    const id = '9e2b1d4c-3f5a-4b6c-8d7e-1f2a3b4c5d6e';
    await http.post('/prompt', { prompt: sdGraph({ seed: 42 }), prompt_id: id });
    await http.waitForHistory(id);
    await http.post('/prompt', { prompt: sdGraph({ seed: 43 }), prompt_id: id });
    await until(async () => (await stats()).executions[id] === 2);
    expect((await stats()).submissions[id]).toBe(2);
  });
});

describe('restart', () => {
  it('close() stops the server; a restart on the same port and data dir loses queue and history, keeps input/output, wipes temp', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fake-restart-'));
    const first = await startFakeComfyUI({ port: 0, dataDir, logLevel });
    const h1 = httpClient(first.url);
    const form = new FormData();
    const { renderPng } = await import('../../tools/fake-comfyui/png.ts');
    form.append('image', new Blob([renderPng({ width: 8, height: 8, contentKey: 'keep' })]), 'keep.png');
    expect((await fetch(`${first.url}/upload/image`, { method: 'POST', body: form })).status).toBe(200);
    const saved = await h1.submit(sdGraph({ seed: 50, prefix: 'persist' }));
    await h1.waitForHistory(saved.prompt_id);
    const g = sdGraph({ seed: 51 });
    g['9'] = { class_type: 'PreviewImage', inputs: { images: ['8', 0] }, _meta: { title: 'Preview' } };
    const preview = await h1.submit(g);
    const ph = await h1.waitForHistory<{ outputs: Record<string, { images: Array<{ filename: string }> }> }>(preview.prompt_id);
    const tempName = ph.outputs['9']!.images[0]!.filename;
    await h1.post('/__fake/faults', { hang: { count: 1 } });
    const running = await h1.submit(sdGraph({ seed: 52 }));
    await until(async () => (await h1.get<Stats>('/__fake/stats')).json.queue.running.includes(running.prompt_id));
    await first.close();
    await expect(fetch(`${first.url}/prompt`)).rejects.toThrow();

    const second = await startFakeComfyUI({ port: first.port, dataDir, logLevel });
    try {
      const h2 = httpClient(second.url);
      expect(second.url).toBe(first.url);
      expect((await h2.get(`/history/${saved.prompt_id}`)).json).toEqual({});
      expect((await h2.get(`/api/jobs/${running.prompt_id}`)).status).toBe(404);
      expect((await h2.get('/queue')).json).toEqual({ queue_running: [], queue_pending: [] });
      expect((await h2.get('/view?filename=persist_00001_.png')).status).toBe(200);
      expect((await h2.get('/view?filename=keep.png&type=input')).status).toBe(200);
      expect((await h2.get(`/view?filename=${tempName}&type=temp`)).status).toBe(404);
      expect((await h2.submit(sdGraph({ seed: 53 }))).number).toBe(0);
    } finally {
      await second.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
