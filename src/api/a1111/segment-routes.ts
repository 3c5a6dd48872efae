/**
 * stable-diffusion-webui-rembg's `POST /rembg` and sd-webui-segment-anything's `POST /sam/sam-predict`, in their
 * shapes (segment.ts maps the bodies), each a durable `segment` render. Before anything is stored, the model
 * file and node classes the render needs are read against the live `/object_info` (the catalog's cached copy):
 * a ComfyUI without them gets the request refused with a 422 naming the client's model field and the file.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { resolveModel } from '../../models/registry.ts';
import { segmentationUnavailable, type SegmentationRole } from '../../models/segmentation.ts';
import { resolveLimits } from '../../request/limits.ts';
import { imageRouteLimits } from '../body-limits.ts';
import type { ApiContext } from '../context.ts';
import { a1111Errors, RENDER_FAILURES } from '../openapi-shapes.ts';
import { outputImages, startAndAnswer } from '../render-wait.ts';
import { renderHeadersSchema } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';
import { RequestError } from './errors.ts';
import { finishSegmentOffLoop, isNothing, planRembg, planSamPredict, rembgBodySchema, samPredictBodySchema, type SegmentPlan } from './segment.ts';

const rembgAnswerSchema = z
  .looseObject({
    image: z.string().describe('the cut-out (RGBA) or, with return_mask, the mask (white = foreground), raw base64 PNG'),
    render_id: z.string().optional(),
    warnings: z.array(z.string()).optional(),
  })
  .nullable()
  .describe('The cut-out or mask; null when model is "None", as the extension answers');

const samAnswerSchema = z
  .looseObject({
    msg: z.string(),
    blended_images: z.array(z.string()).optional().describe('the image with what was found tinted'),
    masks: z.array(z.string()).optional().describe('the mask (white = found): an inpaint mask as it is'),
    masked_images: z.array(z.string()).optional().describe('the image with what was not found transparent (RGBA)'),
    render_id: z.string().optional(),
    warnings: z.array(z.string()).optional(),
  })
  .describe('The masks of what the text names; only `msg` when there was nothing to segment, as the extension answers');

/** Refuses (422 on the client's model field) when this ComfyUI lacks what `role` needs; goes ahead when it cannot be asked. */
async function requireSegmentation(ctx: ApiContext, role: SegmentationRole, field: string): Promise<void> {
  const needs = (await ctx.catalog?.segmentation())?.find((n) => n.role === role);
  const why = needs ? segmentationUnavailable(needs) : undefined;
  if (why) {
    throw new RequestError(422, field, `${field}: ${why}`, {
      missing_files: needs!.missingFiles.map((f) => f.file),
      missing_nodes: needs!.missingNodes,
    });
  }
}

export function registerSegmentRoutes(fastify: FastifyInstance, ctx: ApiContext): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const defaultModel = () => resolveModel(ctx.options.getString('sd_model_checkpoint') ?? '')?.id ?? ctx.config.DEFAULT_MODEL;

  /** The plan rendered after the file check: the images in output order, with the render id and any warnings. */
  const render = async (req: FastifyRequest, reply: FastifyReply, route: string, plan: SegmentPlan, role: SegmentationRole) => {
    await requireSegmentation(ctx, role, plan.modelField);
    const normalized = await finishSegmentOffLoop(plan, { defaultModel: defaultModel(), limits: resolveLimits(ctx.config) });
    for (const w of normalized.warnings) req.log.info({ warning: w }, 'request adjusted');
    const answered = await startAndAnswer(ctx, req, reply, route, normalized, async ({ result, renderId }) => ({
      images: await outputImages(ctx, result),
      extra: { render_id: renderId, ...(normalized.warnings.length > 0 ? { warnings: normalized.warnings } : {}) },
    }));
    return 'images' in answered ? answered : { reply: answered };
  };

  const schema = (summary: string, body: z.ZodType, answer: z.ZodType) => ({
    summary,
    tags: ['Segmentation'],
    headers: specOnly(renderHeadersSchema),
    body: specOnly(body),
    response: { 200: answer, ...a1111Errors(RENDER_FAILURES) },
  });

  app.post(
    '/rembg',
    {
      bodyLimit: imageRouteLimits(ctx.config).extraSingle,
      schema: schema('Remove the background of an image, as a durable render', rembgBodySchema, rembgAnswerSchema),
    },
    async (req, reply) => {
      const plan = planRembg(req.body);
      if (isNothing(plan)) return null;
      const done = await render(req, reply, 'rembg', plan, 'backgroundRemoval');
      if ('reply' in done) return done.reply;
      return { image: done.images[0] ?? '', ...done.extra };
    },
  );

  app.post(
    '/sam/sam-predict',
    {
      bodyLimit: imageRouteLimits(ctx.config).extraSingle,
      schema: schema('Segment what a text names (SAM3), as a durable render', samPredictBodySchema, samAnswerSchema),
    },
    async (req, reply) => {
      const plan = planSamPredict(req.body);
      if (isNothing(plan)) return { msg: plan.msg ?? '' };
      const done = await render(req, reply, 'sam.sam-predict', plan, 'sam3');
      if ('reply' in done) return done.reply;
      const method = plan.spec.method;
      const text = method.kind === 'text' ? method.text : '';
      // The outputs come in the plan's order: blended, mask, cut-out.
      const [blended, mask, masked] = done.images;
      return {
        msg: `SAM3 inference with text prompt ${JSON.stringify(text)} done.`,
        blended_images: blended ? [blended] : [],
        masks: mask ? [mask] : [],
        masked_images: masked ? [masked] : [],
        ...done.extra,
      };
    },
  );
}
