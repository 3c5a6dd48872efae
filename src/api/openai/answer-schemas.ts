/**
 * The OpenAI image routes' request forms and answers for `/openapi.json` (declared, not used to serialize:
 * route-schemas.ts). The edit form is the zod schema the route validates its fields with, plus the files.
 */
import { z } from 'zod';
import { imageEditFieldsSchema } from './schema.ts';

const file = z.string().meta({ format: 'binary' });
const inlineImage = z.string().describe('base64 or a data: URL (JSON bodies)');

export const imageEditFormSchema = imageEditFieldsSchema.extend({
  image: z
    .union([file, inlineImage, z.array(z.union([file, inlineImage]))])
    .describe('the image(s) to edit: `image`, or `image[]` repeated (edit models take several)'),
  mask: z.union([file, inlineImage]).optional().describe('PNG: transparent pixels mark the area to edit (img2img models inpaint it)'),
});

export const imagesAnswerSchema = z
  .object({
    created: z.number().int(),
    data: z.array(
      z.object({
        b64_json: z.string().optional(),
        url: z.string().optional().describe('GET it from this service (/renders/{id}/outputs/{n}, behind API_TOKEN)'),
        revised_prompt: z.string().optional().describe('only when the prompt rendered differs from the one sent'),
        seed: z.number().int().describe('the seed this image rendered with'),
      }),
    ),
    output_format: z.string(),
    size: z.string(),
    render_id: z.string(),
    warnings: z.array(z.string()).optional().describe('accepted but not applied, or adjusted'),
  })
  .describe('The images');

export const modelObjectSchema = z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() });
export const modelListSchema = z.object({ object: z.literal('list'), data: z.array(modelObjectSchema) }).describe('Every model this service renders');
