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
    progress: z.number().describe('0..100'),
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
