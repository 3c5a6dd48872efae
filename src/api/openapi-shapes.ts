/**
 * Response shapes the routes declare for `/openapi.json` (route-schemas.ts: declared, not used to serialize):
 * the error envelope of each route family, and the helpers that name a status and what it means.
 */
import { z } from 'zod';

/** A1111's envelope (`handle_exception`), plus `field` naming the input at fault. */
export const a1111ErrorSchema = z.looseObject({
  error: z.string().describe('kind: HTTPException for a refused request, the failure kind of a failed render'),
  detail: z.string().describe('what went wrong, naming the field'),
  body: z.string(),
  errors: z.string().describe('every problem found, or the message ComfyUI gave'),
  field: z.string().optional().describe('the request field at fault'),
});

/** OpenAI's envelope, on every `/v1/*` error; `detail` kept beside it for FastAPI-style clients. */
export const openAiErrorSchema = z.looseObject({
  error: z.object({
    message: z.string(),
    type: z.string().describe('invalid_request_error, not_found_error, authentication_error, server_error, …'),
    param: z.string().nullable().describe('the request field at fault'),
    code: z.union([z.string(), z.number()]).nullable(),
  }),
  detail: z.string().optional(),
});

const described = <S extends z.ZodType>(schema: S, description: string): S => schema.describe(description);

/** The error answers of an A1111-family route that reads a body. */
export function a1111Errors(extra: Record<number, string> = {}): Record<number, z.ZodType> {
  const statuses: Record<number, string> = {
    400: 'Invalid input (detail and field name it)',
    413: 'An image or the body is too large',
    422: 'A value of the wrong type (detail and field name it)',
    ...extra,
  };
  return Object.fromEntries(Object.entries(statuses).map(([s, d]) => [s, described(a1111ErrorSchema, d)]));
}

/** The error answers of an OpenAI-family route. */
export function openAiErrors(extra: Record<number, string> = {}): Record<number, z.ZodType> {
  const statuses: Record<number, string> = { 400: 'Invalid input (param names the field)', ...extra };
  return Object.fromEntries(Object.entries(statuses).map(([s, d]) => [s, described(openAiErrorSchema, d)]));
}

/** Statuses a render-starting route adds: no GPU or a full queue, and a render that failed. */
export const RENDER_FAILURES: Record<number, string> = {
  409: 'Idempotency-Key reused with another body',
  429: "This client's share of the waiting renders is full (MAX_WAITING_RENDERS_PER_CLIENT; Retry-After)",
  503: 'Too many renders waiting (Retry-After), or ComfyUI unavailable',
  500: 'The render failed (the envelope names ComfyUI node and input when ComfyUI refused)',
};

/** A response of raw bytes of one of `mimes` (an image, a video, a page). */
export function bytesResponse(description: string, mimes: string[]): { description: string; content: Record<string, { schema: z.ZodType }> } {
  const schema = z.string().meta({ format: 'binary' });
  return { description, content: Object.fromEntries(mimes.map((m) => [m, { schema }])) };
}

/** A route that answers JSON `null` (A1111's refresh and settings actions; clients call `.json()`). */
export const nullAnswer = z.null().describe('null');

/** The video API's envelope: FastAPI's `detail` and an OpenAI-style `error` whose code is the HTTP status. */
export const videoErrorSchema = z.looseObject({
  detail: z.string(),
  error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable().describe('the request field at fault'), code: z.number() }),
});

export function videoErrors(statuses: Record<number, string>): Record<number, z.ZodType> {
  return Object.fromEntries(Object.entries(statuses).map(([s, d]) => [s, described(videoErrorSchema, d)]));
}
