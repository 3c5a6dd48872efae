/**
 * ComfyUI's own API as a protocol of the front, with and without the `/api` prefix (ComfyUI serves both):
 *
 *   POST /prompt                 a graph → a durable `prompt` render (prompt.ts), ComfyUI's answer or 400
 *   GET  /prompt                 {exec_info: {queue_remaining}}
 *   GET  /history[/{prompt_id}]  ComfyUI's history items (history.ts), outputs named for /view
 *   GET  /view                   a render's file from the blob store (`preview=webp;90` converts an image)
 *   POST /upload/image|mask      images kept as blobs (uploads.ts)
 *   GET  /queue, POST /queue     prompt renders running / waiting; `delete` / `clear` cancel waiting ones
 *   POST /interrupt              cancel the running prompt render (`prompt_id`), or every running one
 *   GET  /object_info[/{class}], /models[/{folder}], /embeddings, /system_stats, /features, /extensions
 *                                answered by a live backend (backends.ts)
 *   GET  /ws?clientId=           events.ts (the WebSocket upgrade is taken on the HTTP server itself)
 *
 * Every prompt goes through the one submission service (renders/submit.ts) like every other render: its
 * prompt id is its idempotency key (the same id and graph again attach to the same render), its priority
 * is ComfyUI's `front` / `number` (or X-Priority), and it waits for the GPU lease like any render.
 *
 * With named API keys each key is its own ComfyUI: its prompt ids name its own renders (history, the socket's
 * events), and its queue, history, `delete` / `clear` and interrupt reach only its own prompts; an operator
 * key's lists and interrupt reach every prompt. `/view` serves by content address (a file's sha256 is its
 * name): only a client that was given the name can fetch it.
 */
import multipart from '@fastify/multipart';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AdmissionRefusedError } from '../../renders/admission.ts';
import { IdempotencyConflictError } from '../../renders/render-service.ts';
import { RequestError } from '../../errors/request-error.ts';
import type { ApiContext } from '../context.ts';
import { clientContextOf, viewerOf } from '../clients.ts';
import { listOwnerFilter, ownerQueryClause } from '../../renders/owner.ts';
import { requestPriority } from '../priority.ts';
import { specOnly } from '../route-schemas.ts';
import { BackendUnavailableError, LiveBackends } from '../live-backends.ts';
import { comfyError, sendComfyError } from './errors.ts';
import { DRAIN_RETRY_AFTER_S, isServiceDraining } from '../drain.ts';
import { PromptEvents } from './events.ts';
import { blobOfFileName } from './files.ts';
import { PromptHistory, promptKey, renderIdFor } from './history.ts';
import { checkGraph, readPromptBody, type PromptBody } from './prompt.ts';
import { webhookUrlHeader } from '../request-headers.ts';
import type { WebhookOption } from '../../renders/webhook-target.ts';
import { graphInputs, promptRequest } from '../../renders/prompt-request.ts';
import { readUploadForm, storeMask, storeUpload } from './uploads.ts';
import { registerComfyUiSocket } from './socket.ts';

const { temporal } = proto;
const STARTED = temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

/** The model name prompt renders are listed under (they name no profile: the graph loads what it loads). */
export const PROMPT_MODEL = 'comfyui-graph';
/** ComfyUI answers a plain /history with up to 10 000 items; this many newest are read from Temporal. */
const DEFAULT_HISTORY_ITEMS = 100;
const MAX_HISTORY_ITEMS = 1_000;
const MAX_QUEUE_ITEMS = 200;

const TAG = 'ComfyUI API';
const anyJson = (d: string) => z.looseObject({}).describe(d);
/** The API key's name a request's prompts belong to (undefined on a service without keys). */
const ownerOfRequest = (req: FastifyRequest): string | undefined => clientContextOf(req).owner;
/** The owner a list or an interrupt is narrowed to: a client key's own prompts; an operator's, every prompt. */
const listScope = (req: FastifyRequest): string | undefined => listOwnerFilter(viewerOf(req));

const comfyErrorSchema = z.object({ error: z.looseObject({ type: z.string(), message: z.string() }), node_errors: z.looseObject({}) });

/** Wires the protocol into the front; the services it keeps are closed with the front. */
// eslint-disable-next-line max-lines-per-function -- the protocol's plugin: its routes share the prompt store and socket hub it creates and closes; nested handlers count in its lines
export async function registerComfyUi(fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const client: Client = ctx.renders.client;
  const backends = new LiveBackends(ctx);
  const history = new PromptHistory(client);
  const events = new PromptEvents(client, history, ctx.logger, ctx.config.dataDir);
  registerComfyUiSocket(fastify, ctx, events);
  fastify.addHook('onClose', async () => events.close());
  let counter = 0;

  // eslint-disable-next-line max-lines-per-function -- the encapsulated scope of ComfyUI's routes (its error handler and parsers apply to them only); each handler is short
  await fastify.register(async (plain) => {
    const app = plain.withTypeProvider<ZodTypeProvider>();
    // A draining front refuses in ComfyUI's envelope; every other error goes on to the front's handler.
    app.setErrorHandler((err, _req, reply) => {
      if (!isServiceDraining(err)) throw err;
      reply.header('Retry-After', String(DRAIN_RETRY_AFTER_S));
      return sendComfyError(reply, 503, comfyError('service_stopping', err.message));
    });
    await app.register(multipart, { limits: { fileSize: ctx.config.MAX_IMAGE_BYTES + 1, files: 2, fields: 8, fieldSize: 64 * 1024, parts: 10 } });

    for (const prefix of ['', '/api']) {
      const promptDoc = {
        summary: `ComfyUI: queue an API-format graph as a durable render${prefix ? ' (/api alias)' : ''}`,
        tags: [TAG],
        body: specOnly(z.looseObject({ prompt: z.looseObject({}), client_id: z.string().optional(), prompt_id: z.string().optional() })),
        response: {
          200: z.object({ prompt_id: z.string(), number: z.number(), node_errors: z.looseObject({}) }).describe("ComfyUI's answer"),
          400: comfyErrorSchema.describe("What ComfyUI would refuse, in ComfyUI's shape; nothing is stored"),
          429: comfyErrorSchema.describe("This client's share of the waiting renders is full (Retry-After)"),
          503: comfyErrorSchema.describe('Too many renders waiting (Retry-After), or no ComfyUI answers'),
        },
      };
      app.post(`${prefix}/prompt`, { schema: promptDoc }, async (req, reply) => {
        const body = readPromptBody(req.body);
        if ('error' in body) return sendComfyError(reply, 400, body);
        let nodes;
        try {
          nodes = (await backends.nodes()).parsed;
        } catch (err) {
          return sendComfyError(reply, 503, comfyError('backend_unavailable', 'No ComfyUI answers /object_info', (err as Error).message));
        }
        const verdict = checkGraph(body.graph, nodes);
        if (!verdict.ok) return sendComfyError(reply, 400, verdict.body);
        const inputs = await graphInputs(body.graph, ctx.blobs);
        const spec = {
          graph: body.graph,
          inputs,
          promptId: body.promptId,
          ...(body.clientId ? { clientId: body.clientId } : {}),
          number: body.number ?? counter++,
        };
        const priority = body.priority ?? requestPriority(req.headers['x-priority'], undefined);
        events.expectWatcher(body.clientId, ownerOfRequest(req));
        let started;
        try {
          started = await ctx.submitter.submit({
            route: 'comfyui.prompt',
            request: promptRequest(spec, PROMPT_MODEL),
            idempotencyKey: promptKey(body.promptId),
            body: { prompt: body.graph },
            priority,
            webhook: promptWebhook(body, req),
          });
        } catch (err) {
          return refused(reply, err);
        }
        events.watch(started.renderId, body.promptId, body.clientId, ownerOfRequest(req));
        reply.header('X-Render-Id', started.renderId);
        return { prompt_id: body.promptId, number: spec.number, node_errors: verdict.nodeErrors };
      });

      app.get(
        `${prefix}/prompt`,
        { schema: { summary: 'ComfyUI: prompts waiting or running', tags: [TAG], response: { 200: anyJson('{exec_info: {queue_remaining}}') } } },
        async (req) => ({ exec_info: { queue_remaining: (await runningPrompts(client, ctx.config.TEMPORAL_TASK_QUEUE, listScope(req))).length } }),
      );

      const historyQuery = z.object({ max_items: z.coerce.number().int().positive().optional(), offset: z.coerce.number().int().optional() });
      app.get(
        `${prefix}/history`,
        {
          schema: {
            summary: "ComfyUI: finished prompts, in ComfyUI's shape",
            tags: [TAG],
            querystring: historyQuery,
            response: { 200: anyJson('{prompt_id: item}') },
          },
        },
        async (req) =>
          history.list(
            ctx.config.TEMPORAL_TASK_QUEUE,
            Math.min(req.query.max_items ?? DEFAULT_HISTORY_ITEMS, MAX_HISTORY_ITEMS),
            ownerQueryClause(listScope(req)),
          ),
      );
      app.get(
        `${prefix}/history/:prompt_id`,
        {
          schema: {
            summary: "ComfyUI: one prompt's history ({} while it waits or runs)",
            tags: [TAG],
            params: z.object({ prompt_id: z.string().max(100) }),
            response: { 200: anyJson('{prompt_id: item}, or {}') },
          },
        },
        async (req) => {
          const item = await history.item(renderIdFor(req.params.prompt_id, ownerOfRequest(req)));
          return item ? { [req.params.prompt_id]: item } : {};
        },
      );

      const viewQuery = z.object({
        filename: z.string().max(300),
        subfolder: z.string().max(300).optional(),
        type: z.string().max(20).optional(),
        preview: z.string().max(40).optional(),
        channel: z.string().max(10).optional(),
      });
      app.get(
        `${prefix}/view`,
        {
          schema: {
            summary: "ComfyUI: a render's output file (from the blob store)",
            tags: [TAG],
            querystring: viewQuery,
            response: { 200: anyJson('the file'), 404: anyJson('No such file') },
          },
        },
        async (req, reply) => {
          const blob = blobOfFileName(req.query.filename);
          if (!blob || !(await ctx.blobs.has(blob.sha256))) return reply.code(404).send({});
          return sendView(ctx, reply, blob, req.query.filename, req.query.preview);
        },
      );

      for (const kind of ['image', 'mask'] as const) {
        app.post(
          `${prefix}/upload/${kind}`,
          {
            schema: {
              summary: `ComfyUI: upload ${kind === 'image' ? 'an image' : "a mask (into an uploaded image's alpha)"}, kept as a blob`,
              tags: [TAG],
              consumes: ['multipart/form-data'],
              response: { 200: z.object({ name: z.string(), subfolder: z.string(), type: z.string() }).describe('The name a graph uses') },
            },
          },
          async (req) => {
            const form = await readUploadForm(req, ctx.config.MAX_IMAGE_BYTES);
            return kind === 'image' ? storeUpload(ctx, form) : storeMask(ctx, form);
          },
        );
      }

      app.get(
        `${prefix}/queue`,
        { schema: { summary: 'ComfyUI: prompt renders running and waiting', tags: [TAG], response: { 200: anyJson('{queue_running, queue_pending}') } } },
        async (req) => {
          const all = await runningPrompts(client, ctx.config.TEMPORAL_TASK_QUEUE, listScope(req));
          const item = (p: RunningPrompt) => [p.number, p.promptId, {}, p.clientId ? { client_id: p.clientId } : {}, []];
          return { queue_running: all.filter((p) => p.onGpu).map(item), queue_pending: all.filter((p) => !p.onGpu).map(item) };
        },
      );
      const queueBody = z.looseObject({ delete: z.array(z.string()).optional(), clear: z.boolean().optional() });
      app.post(
        `${prefix}/queue`,
        {
          schema: {
            summary: 'ComfyUI: cancel waiting prompt renders (delete: [ids], or clear)',
            tags: [TAG],
            body: specOnly(queueBody),
            response: { 200: anyJson('{}') },
          },
        },
        async (req) => {
          const parsed = queueBody.safeParse(req.body ?? {});
          if (!parsed.success) return {};
          const pending = (await runningPrompts(client, ctx.config.TEMPORAL_TASK_QUEUE, listScope(req))).filter((p) => !p.onGpu);
          const targets = parsed.data.clear ? pending : pending.filter((p) => parsed.data.delete?.includes(p.promptId));
          await Promise.all(
            targets.map((p) =>
              client.workflow
                .getHandle(p.renderId)
                .cancel()
                .catch(() => undefined),
            ),
          );
          return {};
        },
      );
      app.post(
        `${prefix}/interrupt`,
        {
          schema: {
            summary: 'ComfyUI: stop the running prompt render (prompt_id), or every running one',
            tags: [TAG],
            body: specOnly(z.looseObject({ prompt_id: z.string().optional() })),
            response: { 200: anyJson('{}') },
          },
        },
        async (req) => {
          const target = req.body && typeof req.body === 'object' ? (req.body as { prompt_id?: unknown }).prompt_id : undefined;
          const running = (await runningPrompts(client, ctx.config.TEMPORAL_TASK_QUEUE, listScope(req))).filter(
            (p) => p.onGpu && (typeof target !== 'string' || p.promptId === target),
          );
          await Promise.all(
            running.map((p) =>
              client.workflow
                .getHandle(p.renderId)
                .cancel()
                .catch(() => undefined),
            ),
          );
          return {};
        },
      );

      const passthrough = (path: string, summary: string) =>
        app.get(
          `${prefix}${path}`,
          {
            schema: {
              summary: `ComfyUI: ${summary} (a live backend answers)`,
              tags: [TAG],
              response: { 200: anyJson('As ComfyUI answers'), 503: anyJson('No ComfyUI answers') },
            },
          },
          async (req, typed) => {
            const reply = typed as FastifyReply;
            const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : '';
            const rest = req.url.split('?')[0]!.slice(prefix.length);
            try {
              const a = await backends.get(`${rest}${query}`);
              return reply.code(a.status).type(a.contentType).send(a.body);
            } catch (err) {
              if (err instanceof BackendUnavailableError) return reply.code(503).send({ error: err.message });
              throw err;
            }
          },
        );
      passthrough('/object_info', 'every node class');
      passthrough('/object_info/:node_class', 'one node class');
      passthrough('/models', 'model folders');
      passthrough('/models/:folder', "a folder's model files");
      passthrough('/embeddings', 'embeddings');
      passthrough('/system_stats', 'system stats');
      passthrough('/features', 'feature flags');
      passthrough('/extensions', 'web extensions');
    }
  });
}

/**
 * A prompt is async work (the client follows it on the socket or polls /history): its webhook is
 * `extra_data.webhook`, else X-Webhook-URL, else the configured WEBHOOK_URL.
 */
function promptWebhook(body: PromptBody, req: FastifyRequest): WebhookOption {
  const header = webhookUrlHeader(req.headers);
  const promptId = body.promptId;
  return {
    ...(body.webhook !== undefined ? { url: body.webhook, field: 'extra_data.webhook' } : { ...(header ? { url: header } : {}), field: 'X-Webhook-URL' }),
    async: true,
    event: 'prompt',
    data: () => ({ prompt_id: promptId }),
    resultPath: () => `/history/${promptId}`,
  };
}

function refused(reply: FastifyReply, err: unknown): FastifyReply {
  if (err instanceof AdmissionRefusedError) {
    reply.header('Retry-After', String(err.retryAfterSeconds));
    return sendComfyError(reply, err.status, comfyError('queue_full', err.message));
  }
  if (err instanceof IdempotencyConflictError)
    return sendComfyError(reply, 400, comfyError('duplicate_prompt_id', 'prompt_id was already used for another graph', err.message));
  if (err instanceof RequestError) return sendComfyError(reply, err.status, comfyError('invalid_prompt', err.message));
  throw err;
}

interface RunningPrompt {
  renderId: string;
  promptId: string;
  clientId?: string;
  number: number;
  onGpu: boolean;
}

/**
 * Prompt renders not yet ended on this task queue (of `owner` only, when given), oldest first; `onGpu` when
 * their attempt runs on a GPU.
 */
async function runningPrompts(client: Client, taskQueue: string, owner: string | undefined): Promise<RunningPrompt[]> {
  const query = `WorkflowType = 'render' AND RenderKind = 'prompt' AND TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'${ownerQueryClause(owner)}`;
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query, pageSize: MAX_QUEUE_ITEMS })) {
    ids.push(w.workflowId);
    if (ids.length >= MAX_QUEUE_ITEMS) break;
  }
  const out: RunningPrompt[] = [];
  for (const id of ids.reverse()) {
    try {
      const d = await client.workflow.getHandle(id).describe();
      if (d.status.name !== 'RUNNING') continue;
      const memo = d.memo ?? {};
      out.push({
        renderId: id,
        promptId: typeof memo.promptId === 'string' ? memo.promptId : id,
        ...(typeof memo.clientId === 'string' ? { clientId: memo.clientId } : {}),
        number: typeof memo.number === 'number' ? memo.number : 0,
        onGpu: d.raw.pendingActivities?.some((a) => a.activityType?.name === 'runPrompt' && a.state === STARTED) ?? false,
      });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
  return out;
}

let sharpModule: Promise<typeof import('sharp').default> | undefined;
const loadSharp = (): Promise<typeof import('sharp').default> => (sharpModule ??= import('sharp').then((m) => m.default));

/** The file as stored, or (`preview=webp;90`, `jpeg;80`) an image converted as ComfyUI's preview does. */
async function sendView(
  ctx: ApiContext,
  reply: FastifyReply,
  blob: { sha256: string; mime: string },
  filename: string,
  preview: string | undefined,
): Promise<FastifyReply> {
  const [format, q] = (preview ?? '').split(';');
  if (blob.mime.startsWith('image/') && (format === 'webp' || format === 'jpeg')) {
    const sharp = await loadSharp();
    const quality = Math.min(100, Math.max(1, Number(q) || 90));
    const img = sharp(await ctx.blobs.get(blob.sha256), { limitInputPixels: ctx.config.MAX_IMAGE_PIXELS });
    const data = format === 'webp' ? await img.webp({ quality }).toBuffer() : await img.jpeg({ quality }).toBuffer();
    return reply.type(`image/${format}`).header('Content-Disposition', `filename="${filename}"`).send(data);
  }
  const stream = await ctx.blobs.openRead(blob.sha256);
  return reply.type(blob.mime).header('Content-Disposition', `filename="${filename}"`).send(stream);
}
