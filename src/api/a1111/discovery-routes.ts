/**
 * The A1111 routes clients call around renders: model list, options (current model), samplers and
 * schedulers, and the lists some clients read at start-up (upscalers, scripts, ...). Shapes follow
 * A1111's (docs/a1111-contract.md); routes that A1111 answers with `null` or `{}` answer the same, since clients
 * call `.json()` on them.
 */
import { viewerOf } from '../clients.ts';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { RequestError } from './errors.ts';
import { SD_UPSCALE_SCRIPT } from './sd-upscale.ts';
import { checkOptions } from '../options-schema.ts';
import { knownModelNames, listImageProfiles, resolveModel } from '../../models/registry.ts';
import { listSamplers, listSchedulers } from '../../models/samplers.ts';
import type { ApiContext } from '../context.ts';
import { LiveProgress, type ProgressSnapshot } from '../../progress/live-progress.ts';
import { markPolled, readPreview } from '../../progress/previews.ts';
import { progressValue } from '../../progress/render-progress.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { optionsSchema, progressQuerySchema, progressSchema, samplersSchema, schedulersSchema, sdModelsSchema } from './answer-schemas.ts';
import { a1111Errors, nullAnswer } from '../openapi-shapes.ts';
import { specOnly } from '../route-schemas.ts';

const optionsPatchSchema = z.record(z.string(), z.unknown()).describe('Settings to change: one key or the whole dict');
/** Clients poll progress about once a second: a late answer is worth less than a partial one. */
const PROGRESS_TIMEOUT_MS = 3_000;

const doc = (summary: string, response: Record<number, z.ZodType>) => ({ schema: { summary, tags: ['A1111'], response } });

// eslint-disable-next-line max-lines-per-function -- a plugin of one-route handlers, each a few lines; nested handlers count in its lines
export function registerA1111Discovery(fastify: FastifyInstance, ctx: ApiContext): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  // Models the ComfyUI lacks a file or node for are not offered (GET /health says why).
  app.get('/sdapi/v1/sd-models', doc('Models (profiles) this service renders on its ComfyUI', { 200: sdModelsSchema }), async () => {
    const unusable = (await ctx.catalog?.unusableModels()) ?? new Set<string>();
    return listImageProfiles()
      .filter((p) => !unusable.has(p.id))
      .map((p) => ({
        title: p.title,
        model_name: p.id,
        hash: null,
        sha256: null,
        filename: p.files.unet ?? p.id,
        config: null,
      }));
  });

  app.get('/sdapi/v1/options', doc('Current settings (sd_model_checkpoint, samples_format, …)', { 200: optionsSchema }), async () => ({
    samples_format: 'png',
    send_seed: true,
    CLIP_stop_at_last_layers: 1,
    sd_vae: 'Automatic',
    sd_checkpoint_hash: null,
    ...ctx.options.all(),
  }));

  const optionsDoc = {
    summary: 'Change settings (one key or the whole dict)',
    tags: ['A1111'],
    body: specOnly(optionsPatchSchema),
    response: { 200: nullAnswer, ...a1111Errors() },
  };
  app.post('/sdapi/v1/options', { schema: optionsDoc }, async (req) => {
    const parsed = optionsPatchSchema.safeParse(req.body ?? {});
    if (!parsed.success) throw new RequestError(422, 'body', 'options must be a JSON object');
    const checked = checkOptions(parsed.data);
    const bad = checked.errors[0];
    if (bad) throw new RequestError(422, bad.field, `${bad.field}: ${bad.message}`);
    if (checked.ignored.length > 0) req.log.info({ ignored: checked.ignored.slice(0, 20), count: checked.ignored.length }, 'options: unknown keys ignored');
    const patch: Record<string, unknown> = { ...checked.values };
    if ('sd_model_checkpoint' in patch) {
      const profile = resolveModel(String(patch.sd_model_checkpoint));
      if (!profile || profile.kinds.includes('video')) {
        throw new RequestError(
          400,
          'sd_model_checkpoint',
          `unknown model ${JSON.stringify(patch.sd_model_checkpoint)}; known models: ${knownModelNames().join(', ')}`,
        );
      }
      // Store the title: clients compare it with the titles from sd-models to decide whether to switch.
      patch.sd_model_checkpoint = profile.title;
    }
    ctx.options.update(patch);
    return null;
  });

  app.get('/sdapi/v1/samplers', doc('Sampler names', { 200: samplersSchema }), async () => listSamplers());
  app.get('/sdapi/v1/schedulers', doc('Scheduler names', { 200: schedulersSchema }), async () => listSchedulers());
  const scripts = z.object({ txt2img: z.array(z.string()), img2img: z.array(z.string()) });
  app.get('/sdapi/v1/scripts', doc('Scripts (img2img: sd upscale)', { 200: scripts.describe('The scripts each route runs') }), async () => ({
    txt2img: [],
    img2img: [SD_UPSCALE_SCRIPT],
  }));
  app.get('/sdapi/v1/sd-vae', doc('VAEs (none selectable)', { 200: z.array(z.unknown()).describe('Empty') }), async () => []);
  app.get('/sdapi/v1/prompt-styles', doc('Prompt styles (none)', { 200: z.array(z.unknown()).describe('Empty') }), async () => []);
  const embeddings = z.object({ loaded: z.record(z.string(), z.unknown()), skipped: z.record(z.string(), z.unknown()) });
  app.get('/sdapi/v1/embeddings', doc('Embeddings (none)', { 200: embeddings.describe('No embeddings') }), async () => ({ loaded: {}, skipped: {} }));
  app.get('/sdapi/v1/cmd-flags', doc('Command-line flags (none)', { 200: z.record(z.string(), z.unknown()).describe('Empty') }), async () => ({}));

  // Live progress from Temporal (heartbeats of the running prompt), not from this process: see
  // src/progress/live-progress.ts. SillyTavern and others treat `job_count === 0` as idle, so idle is all zeros.
  const live = new LiveProgress({
    client: ctx.renders.client,
    namespace: ctx.config.TEMPORAL_NAMESPACE,
    taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
    logger: ctx.logger.child({ component: 'progress' }),
  });
  ctx.inFlight.onFinished((renderId) => live.finished(renderId));
  const progressDoc = {
    summary: 'Live progress of the render on the GPU',
    tags: ['A1111'],
    querystring: progressQuerySchema,
    response: { 200: progressSchema },
  };
  app.get('/sdapi/v1/progress', { schema: progressDoc }, async (req) => {
    let snapshot: ProgressSnapshot;
    try {
      let timer: NodeJS.Timeout | undefined;
      const slow = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${PROGRESS_TIMEOUT_MS} ms`)), PROGRESS_TIMEOUT_MS);
      });
      try {
        snapshot = await Promise.race([live.snapshot(ctx.inFlight.list(viewerOf(req)).map((r) => r.renderId)), slow]);
      } finally {
        clearTimeout(timer);
      }
    } catch (err) {
      // Temporal unreachable: still answer (clients poll this in a loop), with what this front knows.
      req.log.warn({ err: (err as Error).message }, 'progress: Temporal did not answer');
      snapshot = { jobCount: ctx.inFlight.size };
    }
    // A client watches: ask ComfyUI for sampler previews from now on (src/progress/previews.ts).
    markPolled(ctx.config.dataDir);
    const skipParam = (req.query as { skip_current_image?: unknown } | undefined)?.skip_current_image;
    const skipImage = skipParam === true || (typeof skipParam === 'string' && skipParam.toLowerCase() === 'true');
    const preview = snapshot.current && !skipImage ? readPreview(ctx.config.dataDir, snapshot.current.renderId) : undefined;
    return a1111Progress(snapshot, preview?.toString('base64'));
  });

  // A1111 interrupts (or skips in) the job on the GPU: here that is the oldest render this front is waiting
  // on (renders reach the GPU first in, first out). The waiting request then answers 200 with what was done.
  const interruptDoc = doc('Stop the render on the GPU; its request answers 200 with the images finished so far', {
    200: z.object({}).describe('{} (also when nothing was running)'),
  });
  app.post('/sdapi/v1/interrupt', interruptDoc, async (req) => {
    const current = ctx.inFlight.list(viewerOf(req))[0];
    if (current) {
      req.log.info({ renderId: current.renderId }, 'interrupt: stopping render');
      await signalUnlessEnded(current.interrupt(), req.log);
    }
    return {};
  });
  // A1111's captioning (CLIP interrogator, DeepBooru) has no ComfyUI core node to run on: say so plainly
  // instead of a bare 404, so clients (webuiapi's interrogate()) show why.
  app.post(
    '/sdapi/v1/interrogate',
    doc('Captioning: not available (ComfyUI has no captioning node); always 422', a1111Errors({ 422: 'Not available here' })),
    async () => {
      throw new RequestError(
        422,
        'model',
        'interrogate: not available; it needs an image-captioning model (A1111 "clip" or "deepdanbooru"), and this service renders through ComfyUI, which has no captioning node',
      );
    },
  );
  app.post('/sdapi/v1/skip', doc('End the current image of a batch; the render goes on with the next', { 200: nullAnswer }), async (req) => {
    const current = ctx.inFlight.list(viewerOf(req))[0];
    if (current) {
      req.log.info({ renderId: current.renderId }, 'skip: ending the current image');
      await signalUnlessEnded(current.skip(), req.log);
    }
    return null;
  });
}

/**
 * A render can end between the listing and the signal (its waiting request has not answered yet): there is
 * nothing left to interrupt or skip then, which is A1111's answer too when no job runs.
 */
async function signalUnlessEnded(signal: Promise<void>, log: { info(obj: object, msg: string): void }): Promise<void> {
  try {
    await signal;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    log.info({ err: err.message }, 'the render ended before the signal reached it');
  }
}

/** A1111's `/sdapi/v1/progress` body. `job_timestamp` is A1111's `YYYYMMDDhhmmss` of the job start. */
export function a1111Progress(s: ProgressSnapshot, currentImage?: string): z.output<typeof progressSchema> {
  const c = s.current;
  const started = c?.itemStartedAt !== undefined ? new Date(c.itemStartedAt).toISOString().replace(/[-:T]/g, '').slice(0, 14) : '0';
  return {
    // The value /v1/videos shows as a percent (render-progress.ts `percent`): the two routes agree.
    progress: progressValue(c ? c.progress : (s.pendingProgress ?? 0)),
    eta_relative: c ? round(c.etaSeconds, 2) : 0,
    state: {
      skipped: false,
      interrupted: s.pending === 'stopping',
      stopping_generation: false,
      job: c?.renderId ?? '',
      // A1111 counts images: batch_size × n_iter of each render.
      job_count: s.imageCount ?? s.jobCount,
      job_timestamp: started,
      job_no: c?.item ?? 0,
      sampling_step: c?.value ?? 0,
      sampling_steps: c?.max ?? 0,
    },
    current_image: currentImage ?? null,
    textinfo: textinfo(s),
  };
}

/** A1111 shows what the job is doing in `textinfo`; null when idle, as A1111 does. */
export function textinfo(s: ProgressSnapshot): string | null {
  const c = s.current;
  if (!c) {
    if (s.jobCount === 0) return null;
    if (s.pending === 'stopping') return 'Stopping (interrupted)';
    if (s.pending === 'done') return 'Finishing';
    if (s.pending === 'starting') return s.pendingItem ? `Starting image ${s.pendingItem.item}/${s.pendingItem.items}` : 'Starting';
    return 'Waiting for a GPU';
  }
  const image = `image ${c.item + 1}/${c.items}`;
  if (c.phase === 'saving') return `Saving ${image}`;
  if (c.phase === 'decoding') return `Decoding (VAE) ${image}`;
  if (c.phase === 'encoding') return `Encoding the prompt, ${image}`;
  if (c.phase === 'sampling' || (c.phase === undefined && c.max > 0)) return `Sampling step ${c.value}/${c.max}, ${image}`;
  return c.node ? `Running node ${c.node}, ${image}` : `Starting ${image}`;
}

const round = (v: number, digits: number): number => Math.round(v * 10 ** digits) / 10 ** digits;
