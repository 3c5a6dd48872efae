/**
 * Workflow files as typed endpoints (src/workflow-files/manifest.ts): each `<name>` in WORKFLOWS_DIR (default
 * the repository's `workflows/`) is served as
 *
 *   POST /workflows/{name}                 its parameters (a zod schema built from the manifest, in /openapi.json)
 *                                          → 200 the outputs once rendered, or with `?async=true` 202 at once
 *   GET  /workflows/{name}/renders/{id}    the status of one of its renders, with the outputs once completed
 *
 * The graph with the parameters written in is a `prompt` render like any other (one submission service:
 * Idempotency-Key, admission, X-Priority, the GPU lease; history, replay, retention, gallery). Each file is
 * checked against the live `/object_info` when the front starts (logged) and by `npm run contract`.
 */
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RequestError } from '../../errors/request-error.ts';
import { decodeImageInputStreaming } from '../../images/decode.ts';
import { assertDecodable } from '../../images/decodable.ts';
import { inputUploadFor } from '../../models/plan.ts';
import type { RenderResult } from '../../contracts/render.ts';
import { graphInputs, promptIdForKey, promptKey, promptRequest } from '../../renders/prompt-request.ts';
import { classifyFailure, RenderFailedError } from '../../renders/render-service.ts';
import { applyParameters, bodySchemaOf, checkWorkflow, loadWorkflowFiles, SHIPPED_WORKFLOWS_DIR, type WorkflowFile } from '../../workflow-files/manifest.ts';
import type { ApiContext } from '../context.ts';
import { viewerOf } from '../clients.ts';
import { canSee, ownerOf } from '../../renders/owner.ts';
import { LiveBackends } from '../live-backends.ts';
import { a1111Errors } from '../openapi-shapes.ts';
import { requestPriority } from '../priority.ts';
import { idempotencyKey, webhookUrlHeader } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';

const TAG = 'Workflow files';

const outputSchema = z.object({
  node: z.string(),
  index: z.number().describe("The output's index in the render (GET /renders/{id}/outputs/{index})"),
  mime: z.string(),
  width: z.number().optional(),
  height: z.number().optional(),
  url: z.string(),
});
const answerSchema = z.object({
  render_id: z.string(),
  prompt_id: z.string().describe("The render's id in ComfyUI's API (/history/{prompt_id})"),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  outputs: z.array(outputSchema).optional(),
  error: z.object({ type: z.string(), message: z.string() }).optional(),
  status_url: z.string(),
});
type Answer = z.infer<typeof answerSchema>;

export function registerWorkflowFiles(fastify: FastifyInstance, ctx: ApiContext): void {
  const dir = ctx.config.WORKFLOWS_DIR ?? SHIPPED_WORKFLOWS_DIR;
  if (!existsSync(dir)) return;
  const files = loadWorkflowFiles(dir);
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  for (const wf of files) registerOne(app, ctx, wf);
  void checkAtStart(ctx, files);
}

async function checkAtStart(ctx: ApiContext, files: WorkflowFile[]): Promise<void> {
  try {
    const nodes = (await new LiveBackends(ctx).nodes()).parsed;
    for (const wf of files) {
      const problems = checkWorkflow(wf, nodes);
      if (problems.length > 0) ctx.logger.warn({ workflow: wf.name, problems }, 'workflow file does not match the live /object_info');
    }
  } catch (err) {
    ctx.logger.warn({ err: (err as Error).message }, 'workflow files: /object_info unavailable at start, not checked');
  }
}

// eslint-disable-next-line max-lines-per-function -- one workflow file's route: its schema, handler and answer shape read together
function registerOne(app: ReturnType<FastifyInstance['withTypeProvider']>, ctx: ApiContext, wf: WorkflowFile): void {
  const body = bodySchemaOf(wf.manifest);
  const statusUrl = (id: string) => `/workflows/${wf.name}/renders/${id}`;
  const postDoc = {
    summary: `Workflow file ${wf.name}: ${wf.manifest.description}`,
    tags: [TAG],
    querystring: z.object({ async: z.enum(['true', 'false']).optional().describe('true: answer 202 at once, poll status_url') }),
    body: specOnly(body),
    response: {
      200: answerSchema.describe('Rendered'),
      202: answerSchema.describe('Queued (async=true)'),
      ...a1111Errors({ 429: "This client's share of the waiting renders is full", 503: 'Too many renders waiting' }),
    },
  };
  (app as FastifyInstance).withTypeProvider<ZodTypeProvider>().post(`/workflows/${wf.name}`, { schema: postDoc }, async (req, reply) => {
    const parsed = body.safeParse(req.body ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = issue.path.join('.') || 'body';
      throw new RequestError(issue.code === 'unrecognized_keys' ? 400 : 422, field, `${field}: ${issue.message}`);
    }
    const values: Record<string, unknown> = { ...parsed.data };
    const limits = { maxImageBytes: ctx.config.MAX_IMAGE_BYTES, maxImagePixels: ctx.config.MAX_IMAGE_PIXELS };
    const images = [];
    for (const [name, p] of Object.entries(wf.manifest.parameters)) {
      if (p.type !== 'image' || typeof values[name] !== 'string') continue;
      const img = await decodeImageInputStreaming(values[name], name, limits);
      await assertDecodable(img, name, limits.maxImagePixels);
      images.push(img);
      values[name] = inputUploadFor(img.ref).filename;
    }
    for (const img of images) await ctx.blobs.put(img.bytes, { mime: img.ref.mime, width: img.ref.width, height: img.ref.height });
    const graph = applyParameters(wf, values);
    // The render is found by its prompt id (ComfyUI's /history too); an Idempotency-Key retry derives the same one.
    const key = idempotencyKey(req.headers);
    const promptId = key !== undefined ? promptIdForKey(`workflows.${wf.name}`, key) : randomUUID();
    const spec = { graph, inputs: await graphInputs(graph, ctx.blobs), promptId };
    const async = req.query.async === 'true';
    const hook = webhookUrlHeader(req.headers);
    const started = await ctx.submitter.submit({
      // X-Webhook-URL, else (for ?async=true, which nobody waits on) the configured WEBHOOK_URL.
      webhook: {
        ...(hook ? { url: hook } : {}),
        field: 'X-Webhook-URL',
        async,
        event: 'workflow',
        data: () => ({ workflow: wf.name, prompt_id: promptId }),
        resultPath: statusUrl,
      },
      route: `workflows.${wf.name}`,
      request: promptRequest(spec, `workflow:${wf.name}`),
      body: req.body,
      priority: requestPriority(req.headers['x-priority'], undefined),
      idempotencyKey: promptKey(promptId),
    });
    reply.header('X-Render-Id', started.renderId);
    if (async) {
      return reply.code(202).send({ render_id: started.renderId, prompt_id: promptId, status: 'queued', status_url: statusUrl(started.renderId) });
    }
    try {
      const result = await ctx.submitter.wait(started);
      return answerOf(wf, started.renderId, result, statusUrl(started.renderId));
    } catch (err) {
      if (!(err instanceof RenderFailedError)) throw err;
      const f = err;
      return (reply as FastifyReply).code(f.status).send({
        render_id: started.renderId,
        prompt_id: promptId,
        status: 'failed',
        error: { type: f.kind, message: f.message },
        status_url: statusUrl(started.renderId),
      });
    }
  });

  const statusDoc = {
    summary: `Workflow file ${wf.name}: the status of one of its renders`,
    tags: [TAG],
    params: z.object({ id: z.string().max(200) }),
    response: { 200: answerSchema.describe('The render: running, completed (outputs) or failed (error)'), 404: z.looseObject({}).describe('No such render') },
  };
  (app as FastifyInstance).withTypeProvider<ZodTypeProvider>().get(`/workflows/${wf.name}/renders/:id`, { schema: statusDoc }, async (req, reply) => {
    const handle = ctx.renders.handle(req.params.id);
    let described;
    try {
      described = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return reply.code(404).send({ detail: 'Not Found' });
      throw err;
    }
    const promptId = typeof described.memo?.promptId === 'string' ? described.memo.promptId : '';
    const model = described.searchAttributes?.RenderModel?.[0];
    // Another workflow's render, or (with named keys) another key's, is not found, as one that does not exist.
    if ((model !== undefined && model !== `workflow:${wf.name}`) || !canSee(viewerOf(req), ownerOf(described)))
      return reply.code(404).send({ detail: 'Not Found' });
    const url = statusUrl(req.params.id);
    if (described.status.name === 'RUNNING') return { render_id: req.params.id, prompt_id: promptId, status: 'running', status_url: url } satisfies Answer;
    try {
      return answerOf(wf, req.params.id, await handle.result(), url);
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      const f = classifyFailure(req.params.id, err);
      return { render_id: req.params.id, prompt_id: promptId, status: 'failed', error: { type: f.kind, message: f.message }, status_url: url } satisfies Answer;
    }
  });
}

/** The files of the manifest's output nodes, each with its URL on the operators' output route. */
function answerOf(wf: WorkflowFile, renderId: string, result: RenderResult, statusUrl: string): Answer {
  const outputs: NonNullable<Answer['outputs']> = [];
  for (const node of wf.manifest.outputs) {
    for (const list of Object.values(result.ui?.[node] ?? {})) {
      for (const v of list) {
        const i = v && typeof v === 'object' ? (v as { output?: unknown }).output : undefined;
        const ref = typeof i === 'number' ? result.outputs[i] : undefined;
        if (!ref) continue;
        outputs.push({
          node,
          index: i as number,
          mime: ref.mime,
          ...(ref.width ? { width: ref.width } : {}),
          ...(ref.height ? { height: ref.height } : {}),
          url: `/renders/${renderId}/outputs/${i as number}`,
        });
      }
    }
  }
  return {
    render_id: renderId,
    prompt_id: result.request.kind === 'prompt' ? (result.request.graph.promptId ?? '') : '',
    status: 'completed',
    outputs,
    status_url: statusUrl,
  };
}
