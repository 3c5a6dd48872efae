/**
 * What the video routes answer, for `/openapi.json` (declared, not used to serialize: route-schemas.ts);
 * the handlers' return types are checked against them by the type provider.
 */
import { z } from 'zod';

export const videoJobSchema = z
  .object({
    id: z.string().describe('the render id'),
    object: z.literal('video'),
    model: z.string(),
    prompt: z.string(),
    status: z.enum(['queued', 'in_progress', 'completed', 'failed']),
    progress: z.number().describe('0..100, the same number as /sdapi/v1/progress (×100, rounded down)'),
    stage: z
      .enum(['starting', 'encoding', 'sampling', 'decoding', 'saving'])
      .optional()
      .describe('while in progress: what the GPU does (text encoding, sampling, the VAE decode, saving)'),
    size: z.string().nullable(),
    seconds: z.string(),
    num_frames: z.number().optional(),
    fps: z.number().optional(),
    quality: z.literal('default'),
    created_at: z.number(),
    completed_at: z.number().nullable(),
    expires_at: z.null(),
    remixed_from_video_id: z.null(),
    error: z.object({ code: z.number(), message: z.string(), type: z.string().optional() }).nullable(),
    media_type: z.literal('video/mp4'),
    file_name: z.string().nullable(),
    inference_time_s: z.number().nullable(),
    warnings: z.array(z.string()).optional().describe('what was changed from the request, e.g. a size fitted to the model grid (1280x720 → 1280x704)'),
    outcome: z.enum(['completed', 'partial', 'blank']).optional().describe('completed jobs: partial when interrupted or skipped'),
  })
  .describe('The video job');

export const videoPageSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(videoJobSchema),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .describe('A page of video jobs');

export const videoDeletedSchema = z
  .object({ id: z.string(), deleted: z.literal(true), object: z.literal('video.deleted') })
  .describe('Deleted (a running render is cancelled first)');

export const videoContentQuerySchema = z.looseObject({ variant: z.string().optional().describe('only "video" is offered') });
