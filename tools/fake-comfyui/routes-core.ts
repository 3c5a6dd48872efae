/**
 * ComfyUI's core API routes (server.py), registered twice by the server: bare and under `/api`, like
 * `add_routes()` does. Status codes and bodies follow docs/comfyui-protocol.md, including the quirks
 * (HTTP 200 with `node_errors`, 500 for a non-JSON body, empty 200 bodies).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { JOB_STATUSES, historyJob, queueJob } from './jobs.ts';
import type { Job, JobStatus } from './jobs.ts';
import { CANONICAL_UUID, internalError, isObject, parseJsonBody, pyTruthy } from './http-util.ts';
import { registerPromptRoute } from './routes-prompt.ts';
import type { FakeState } from './state.ts';
import { modelFolders, systemStats } from './system-info.ts';
import { SERVER_FEATURE_FLAGS } from './ws-hub.ts';

export { COMFYUI_VERSION } from './system-info.ts';

/** Python `int(str)` for query parameters; undefined when it would raise. */
function pyIntParam(v: string): number | undefined {
  return /^\s*[+-]?\d+\s*$/.test(v) ? Number(v) : undefined;
}

// eslint-disable-next-line max-lines-per-function -- a plugin of the fake's small read routes; nested handlers count in its lines
export function registerCoreRoutes(app: FastifyInstance, state: FakeState): void {
  registerPromptRoute(app, state);

  app.get('/prompt', async () => ({ exec_info: { queue_remaining: state.queue.remaining() } }));

  app.get('/queue', async () => {
    const q = state.queue.currentQueue();
    return { queue_running: q.running, queue_pending: q.pending };
  });

  app.post('/queue', async (req, reply) => {
    let body: unknown;
    try {
      body = parseJsonBody(req.body);
    } catch {
      return internalError(reply);
    }
    if (isObject(body)) {
      if (body.clear) state.queue.wipeQueue();
      if (Array.isArray(body.delete)) {
        for (const id of body.delete) state.queue.deleteQueueItem((i) => i.promptId === id);
      }
    }
    return reply.code(200).send();
  });

  app.get('/history', async (req, reply) => {
    const q = req.query as Record<string, string | undefined>;
    const maxItems = q.max_items === undefined ? undefined : pyIntParam(q.max_items);
    const offset = q.offset === undefined ? -1 : pyIntParam(q.offset);
    if ((q.max_items !== undefined && maxItems === undefined) || offset === undefined) return internalError(reply);
    return state.queue.getHistory(maxItems, offset);
  });

  app.get('/history/:prompt_id', async (req) => state.queue.getHistoryItem((req.params as { prompt_id: string }).prompt_id));

  app.post('/history', async (req, reply) => {
    let body: unknown;
    try {
      body = parseJsonBody(req.body);
    } catch {
      return internalError(reply);
    }
    if (isObject(body)) {
      if (body.clear) state.queue.wipeHistory();
      if (Array.isArray(body.delete)) for (const id of body.delete) state.queue.deleteHistoryItem(String(id));
    }
    return reply.code(200).send();
  });

  app.post('/interrupt', async (req, reply) => {
    let body: unknown;
    try {
      body = parseJsonBody(req.body);
    } catch {
      body = {};
    }
    const promptId = isObject(body) ? body.prompt_id : undefined;
    if (pyTruthy(promptId)) {
      if (!state.interruptIfRunning(String(promptId))) state.log.info({ promptId }, 'Prompt is not currently running, skipping interrupt');
    } else {
      state.interruptGlobal();
    }
    return reply.code(200).send();
  });

  app.post('/free', async (req, reply) => {
    let body: unknown;
    try {
      body = parseJsonBody(req.body);
    } catch {
      return internalError(reply);
    }
    if (isObject(body)) {
      if (body.unload_models === true) {
        state.stats.unloadModelsRequests++;
        state.queue.setFlag('unload_models', true);
      }
      if (body.free_memory === true) state.freeMemory();
    }
    return reply.code(200).send();
  });

  app.get('/object_info', async () => state.objectInfo());
  app.get('/object_info/:node_class', async (req) => {
    const cls = (req.params as { node_class: string }).node_class;
    const info = state.objectInfo();
    return Object.hasOwn(info, cls) ? { [cls]: info[cls] } : {};
  });

  app.get('/system_stats', async () => systemStats());
  app.get('/features', async () => SERVER_FEATURE_FLAGS);
  app.get('/embeddings', async () => []);
  app.get('/extensions', async () => []);

  app.get('/models', async () => Object.keys(modelFolders(state.objectInfo())));
  app.get('/models/:folder', async (req, reply) => {
    const files = modelFolders(state.objectInfo())[(req.params as { folder: string }).folder];
    if (!files) return reply.code(404).send();
    return files;
  });

  // Declared with the literal `/api/jobs` path, so (as in ComfyUI) they exist at /api/jobs and the useless
  // /api/api/jobs, never at /jobs.
  app.get('/api/jobs', async (req, reply) => listJobs(state, req.query as Record<string, string | undefined>, reply));
  app.get('/api/jobs/:job_id', async (req, reply) => {
    const job = findJob(state, (req.params as { job_id: string }).job_id);
    if (!job) return reply.code(404).send({ error: 'Job not found' });
    return job;
  });
  app.post('/api/jobs/:job_id/cancel', async (req) => ({ cancelled: cancelJob(state, (req.params as { job_id: string }).job_id) }));
  app.post('/api/jobs/cancel', async (req, reply) => {
    let body: unknown;
    try {
      body = parseJsonBody(req.body);
    } catch {
      body = undefined;
    }
    const ids = isObject(body) ? body.job_ids : undefined;
    if (!Array.isArray(ids)) return reply.code(400).send({ error: 'job_ids must be a list' });
    const invalid = ids.filter((id) => typeof id !== 'string' || !CANONICAL_UUID.test(id));
    if (invalid.length > 0) return reply.code(400).send({ error: 'job_ids contains invalid id(s)', invalid_ids: invalid });
    let cancelled = false;
    for (const id of ids as string[]) cancelled = cancelJob(state, id) || cancelled;
    return { cancelled };
  });
}

function allJobs(state: FakeState): Job[] {
  const jobs: Job[] = [];
  for (const item of state.queue.running.values()) jobs.push(queueJob(item, 'in_progress'));
  for (const item of state.queue.queue) jobs.push(queueJob(item, 'pending'));
  for (const [id, h] of state.queue.history) jobs.push(historyJob(id, h, false));
  return jobs;
}

function findJob(state: FakeState, id: string): Job | undefined {
  for (const item of state.queue.running.values()) if (item.promptId === id) return queueJob(item, 'in_progress');
  for (const item of state.queue.queue) if (item.promptId === id) return queueJob(item, 'pending');
  const h = state.queue.history.get(id);
  return h ? historyJob(id, h, true) : undefined;
}

/** Interrupts if running, dequeues if pending; false for finished or unknown ids. */
function cancelJob(state: FakeState, id: string): boolean {
  if (state.interruptIfRunning(id)) return true;
  return state.queue.deleteQueueItem((i) => i.promptId === id);
}

function listJobs(state: FakeState, q: Record<string, string | undefined>, reply: FastifyReply): FastifyReply | Record<string, unknown> {
  let statuses: JobStatus[] | undefined;
  if (q.status !== undefined) {
    const parts = q.status
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const bad = parts.filter((s) => !JOB_STATUSES.includes(s as JobStatus));
    if (bad.length > 0) return reply.code(400).send({ error: `Invalid status value(s): ${bad.join(', ')}. Valid values: ${JOB_STATUSES.join(', ')}` });
    statuses = parts as JobStatus[];
  }
  const sortBy = q.sort_by ?? 'created_at';
  if (sortBy !== 'created_at' && sortBy !== 'execution_duration') {
    return reply.code(400).send({ error: "sort_by must be 'created_at' or 'execution_duration'" });
  }
  const sortOrder = q.sort_order ?? 'desc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') return reply.code(400).send({ error: "sort_order must be 'asc' or 'desc'" });
  let limit: number | undefined;
  if (q.limit !== undefined) {
    limit = pyIntParam(q.limit);
    if (limit === undefined || limit <= 0) return reply.code(400).send({ error: 'limit must be a positive integer' });
  }
  let offset = 0;
  if (q.offset !== undefined) {
    const o = pyIntParam(q.offset);
    if (o === undefined) return reply.code(400).send({ error: 'offset must be an integer' });
    offset = Math.max(0, o);
  }

  let jobs = allJobs(state);
  if (statuses) jobs = jobs.filter((j) => statuses.includes(j.status));
  if (q.workflow_id !== undefined) jobs = jobs.filter((j) => j.workflow_id === q.workflow_id);
  const key = (j: Job): number => {
    if (sortBy === 'execution_duration') {
      const s = j.execution_start_time;
      const e = j.execution_end_time;
      return typeof s === 'number' && typeof e === 'number' ? e - s : 0;
    }
    return typeof j.create_time === 'number' ? j.create_time : 0;
  };
  jobs.sort((a, b) => (sortOrder === 'asc' ? key(a) - key(b) : key(b) - key(a)));
  const total = jobs.length;
  const page = jobs.slice(offset, limit === undefined ? undefined : offset + limit);
  return { jobs: page, pagination: { offset, limit: limit ?? null, total, has_more: offset + page.length < total } };
}
