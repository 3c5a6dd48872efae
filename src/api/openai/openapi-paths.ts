/**
 * The OpenAI image routes in `/openapi.json`, generated from the zod schemas the routes validate with.
 */
import { z } from 'zod';
import { imageEditFieldsSchema, imageGenerationSchema } from './schema.ts';

type JsonObject = Record<string, unknown>;

const jsonSchema = (schema: z.ZodType): JsonObject => {
  const { $schema: _drop, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  return json;
};

const openAiErrorSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { message: { type: 'string' }, type: { type: 'string' }, param: { type: ['string', 'null'] }, code: { type: ['string', 'integer', 'null'] } },
    },
  },
};
const imagesSchema = {
  type: 'object',
  properties: {
    created: { type: 'integer' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          b64_json: { type: 'string' },
          url: { type: 'string', description: 'GET it from this service (/renders/{id}/outputs/{n}, behind API_TOKEN)' },
          revised_prompt: { type: 'string', description: 'only when the prompt rendered differs from the one sent' },
          seed: { type: 'integer', description: 'the seed this image rendered with' },
        },
      },
    },
    output_format: { type: 'string' },
    size: { type: 'string' },
    render_id: { type: 'string' },
    warnings: { type: 'array', items: { type: 'string' }, description: 'accepted but not applied, or adjusted' },
  },
};
const json = (description: string, schema: JsonObject): JsonObject => ({ description, content: { 'application/json': { schema } } });
const errors = {
  '400': json('Invalid input (param names the field)', openAiErrorSchema),
  '413': json('An image or the body is too large', openAiErrorSchema),
  '503': json('Too many renders waiting, or no GPU (Retry-After)', openAiErrorSchema),
};

export function openAiImagePaths(): Record<string, JsonObject> {
  const editForm = jsonSchema(imageEditFieldsSchema) as { properties?: JsonObject };
  const file = { type: 'string', format: 'binary' };
  const editMultipart = {
    ...editForm,
    properties: {
      ...editForm.properties,
      image: { description: 'the image(s) to edit: `image`, or `image[]` repeated (edit models take several)', oneOf: [file, { type: 'array', items: file }] },
      mask: { ...file, description: 'PNG: transparent pixels mark the area to edit (img2img models inpaint it)' },
    },
  };
  return {
    '/v1/images/generations': {
      post: {
        summary: 'OpenAI: text to image (extensions: seed, negative_prompt, steps, guidance, cfg_scale, sampler, scheduler)',
        requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(imageGenerationSchema) } } },
        responses: { '200': json('The images', imagesSchema), ...errors },
      },
    },
    '/v1/images/edits': {
      post: {
        summary: 'OpenAI: edit images (references on instruction-edit models, img2img / inpaint on the others)',
        requestBody: { required: true, content: { 'multipart/form-data': { schema: editMultipart }, 'application/json': { schema: jsonSchema(imageEditFieldsSchema) } } },
        responses: { '200': json('The images', imagesSchema), ...errors },
      },
    },
    '/v1/models': {
      get: {
        summary: 'OpenAI: every model this service renders (image and video)',
        responses: {
          '200': json('{object: list, data: [{id, object: model, created, owned_by}]}', {
            type: 'object',
            properties: { object: { type: 'string' }, data: { type: 'array', items: { type: 'object' } } },
          }),
        },
      },
    },
  };
}
