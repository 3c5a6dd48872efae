/**
 * ComfyUI's core API routes (server.py), registered twice by the server: bare and under `/api`, like
 * `add_routes()` does. Status codes and bodies follow ref/comfyui-protocol.md §1, including the quirks
 * (HTTP 200 with `node_errors`, 500 for a non-JSON body, empty 200 bodies).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { validateGraph } from '../comfyui/validate.ts';
import { existsAnnotated } from './files.ts';
import { JOB_STATUSES, historyJob, queueJob } from './jobs.ts';
import type { Job, JobStatus } from './jobs.ts';
import type { QueueItem } from './queue.ts';
import type { FakeState } from './state.ts';
import { SERVER_FEATURE_FLAGS } from './ws-hub.ts';

export const COMFYUI_VERSION = '0.33.0';
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SENSITIVE_EXTRA_DATA_KEYS = ['auth_token_comfy_org', 'api_key_comfy_org'];

export class BodyParseError extends Error {}

/** aiohttp's `request.json()`: any content type, JSON or an exception (which the routes turn into 500). */
export function parseJsonBody(body: unknown): unknown {
  const text = Buffer.isBuffer(body) ? body.toString('utf8') : typeof body === 'string' ? body : '';
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyParseError('invalid JSON body');
  }
}

/** aiohttp's unhandled-exception answer. */
export function internalError(reply: FastifyReply): FastifyReply {
  return reply.code(500).type('text/plain; charset=utf-8').send('500 Internal Server Error\n\nServer got itself in trouble');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function pyTruthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** Python `int(str)` for query parameters; undefined when it would raise. */
function pyIntParam(v: string): number | undefined {
  return /^\s*[+-]?\d+\s*$/.test(v) ? Number(v) : undefined;
}

export function registerCoreRoutes(app: FastifyInstance, state: FakeState): void {
  app.post('/prompt', async (req, reply) => {
    let body: unknown;
    try {
      body = parseJsonBody(req.body);
    } catch {
      return internalError(reply);
    }
    if (!isObject(body)) return internalError(reply);

    let number: number;
    if ('number' in body) {
      const n = typeof body.number === 'number' ? body.number : typeof body.number === 'string' ? Number(body.number) : NaN;
      if (!Number.isFinite(n) || (typeof body.number === 'string' && body.number.trim() === '')) return internalError(reply);
      number = n;
    } else {
      number = state.number;
      if ('front' in body && pyTruthy(body.front)) number = -number;
      state.number++;
    }

    if (!('prompt' in body)) {
      const error = { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} };
      return reply.code(400).send({ error, node_errors: {} });
    }

    let promptId: string;
    if (body.prompt_id === undefined || body.prompt_id === null) promptId = randomUUID();
    else if (typeof body.prompt_id === 'string' && CANONICAL_UUID.test(body.prompt_id)) promptId = body.prompt_id;
    else {
      return reply.code(400).send({
        error: {
          type: 'invalid_prompt_id',
          message: 'prompt_id must be a valid UUID',
          details: 'prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one',
          extra_info: {},
        },
        node_errors: {},
      });
    }

    const fault = state.faults.takePrompt500();
    if (fault && !fault.afterQueue) {
      state.log.warn({ promptId }, 'fault: POST /prompt answers 500');
      return internalError(reply);
    }

    const targets = Array.isArray(body.partial_execution_targets) ? body.partial_execution_targets.map(String) : null;
    const valid = validateGraph(body.prompt, state.objectInfo(), {
      fileExists: (name) => existsAnnotated(state.dirs, name),
      partialExecutionTargets: targets,
    });

    const extraData: Record<string, unknown> = isObject(body.extra_data) ? { ...body.extra_data } : {};
    if ('client_id' in body) extraData.client_id = body.client_id;

    if (!valid.ok) {
      state.log.warn({ error: valid.error }, 'invalid prompt');
      return reply.code(400).send({ error: valid.error, node_errors: valid.nodeErrors });
    }
    const sensitive: Record<string, unknown> = {};
    for (const k of SENSITIVE_EXTRA_DATA_KEYS) {
      if (k in extraData) {
        sensitive[k] = extraData[k];
        delete extraData[k];
      }
    }
    extraData.create_time = Date.now();
    const item: QueueItem = {
      number,
      promptId,
      prompt: structuredClone(body.prompt as Record<string, unknown>),
      extraData,
      outputs: valid.outputs,
      sensitive,
    };
    state.queue.put(item);
    state.stats.submissions[promptId] = (state.stats.submissions[promptId] ?? 0) + 1;
    if (fault) {
      state.log.warn({ promptId }, 'fault: POST /prompt queued, then answers 500');
      return internalError(reply);
    }
    return reply.send({ prompt_id: promptId, number, node_errors: valid.nodeErrors });
  });

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
      if (body.unload_models === true) state.queue.setFlag('unload_models', true);
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

  app.get('/models', async () => Object.keys(modelFolders(state)));
  app.get('/models/:folder', async (req, reply) => {
    const files = modelFolders(state)[(req.params as { folder: string }).folder];
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
    if (!Array.isArray(ids)) return reply.code(400).send({ error: 'job_ids contains invalid id(s)', invalid_ids: [ids ?? null] });
    const invalid = ids.filter((id) => typeof id !== 'string' || !CANONICAL_UUID.test(id));
    if (invalid.length > 0) return reply.code(400).send({ error: 'job_ids contains invalid id(s)', invalid_ids: invalid });
    let cancelled = false;
    for (const id of ids as string[]) cancelled = cancelJob(state, id) || cancelled;
    return { cancelled };
  });
}

function systemStats(): Record<string, unknown> {
  const gib = 1024 ** 3;
  return {
    system: {
      os: 'linux',
      ram_total: 64 * gib,
      ram_free: 48 * gib,
      comfyui_version: COMFYUI_VERSION,
      required_frontend_version: '1.27.10',
      installed_templates_version: '0.1.95',
      required_templates_version: '0.1.95',
      comfy_package_versions: {},
      python_version: '3.12.3 (main, Jun 18 2025, 17:59:45) [GCC 13.3.0]',
      pytorch_version: '2.8.0+cu128',
      embedded_python: false,
      deploy_environment: 'local-git',
      argv: ['main.py', '--fake-comfyui'],
    },
    devices: [
      {
        name: 'cuda:0 NVIDIA GeForce RTX 4090 (fake) : cudaMallocAsync',
        type: 'cuda',
        index: 0,
        vram_total: 24 * gib,
        vram_free: 22 * gib,
        torch_vram_total: 0,
        torch_vram_free: 0,
      },
    ],
  };
}

/** Model folders and their files, derived from the loader combos in `/object_info`. */
function modelFolders(state: FakeState): Record<string, string[]> {
  const info = state.objectInfo();
  const combo = (node: string, input: string, filter: (f: string) => boolean = () => true): string[] => {
    const spec = info[node]?.input.required?.[input];
    return Array.isArray(spec?.[0]) ? (spec[0] as unknown[]).map(String).filter(filter) : [];
  };
  const uniq = (...lists: string[][]) => [...new Set(lists.flat())].sort();
  const diffusion = uniq(combo('UNETLoader', 'unet_name'), combo('UnetLoaderGGUF', 'unet_name'));
  const textEncoders = uniq(combo('CLIPLoader', 'clip_name'), combo('CLIPLoaderGGUF', 'clip_name'));
  return {
    checkpoints: combo('CheckpointLoaderSimple', 'ckpt_name'),
    loras: combo('LoraLoaderModelOnly', 'lora_name'),
    vae: combo('VAELoader', 'vae_name', (f) => f !== 'pixel_space'),
    text_encoders: textEncoders,
    clip: textEncoders,
    diffusion_models: diffusion,
    unet: diffusion,
    clip_vision: [],
    style_models: [],
    embeddings: [],
    diffusers: [],
    vae_approx: [],
    controlnet: [],
    gligen: [],
    upscale_models: [],
    hypernetworks: [],
    photomaker: [],
    classifiers: [],
    model_patches: [],
    audio_encoders: [],
  };
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
    const parts = q.status.split(',').map((s) => s.trim()).filter(Boolean);
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
