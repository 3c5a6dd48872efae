/**
 * How routes declare their zod schemas (through fastify-type-provider-zod) and what Fastify does with them.
 *
 * - `params` and `querystring` are validated by the type provider's zod validator before the handler runs;
 *   a failure becomes a RequestError naming the field, which each route family's error handler renders in
 *   its own envelope (A1111's, OpenAI's, the video API's).
 * - `body` (and `headers`) are declared for the spec only. The handler validates the body with the same zod
 *   schema, and must: the body gate, the depth and image-size checks (413 naming the image) and the byte
 *   workers that decode images come first, A1111's leniency reads the raw body (unknown keys kept for the
 *   "not applied" report), the Idempotency-Key fingerprint hashes the body as sent, and multipart bodies are
 *   read by the route itself. `specOnly` types such a schema as `unknown`, so no handler mistakes the raw
 *   body for a validated one.
 * - Response schemas are for the spec only: answers are serialized with JSON.stringify as before, so a
 *   response of several megabytes of base64 is not walked by zod on the event loop.
 */
import type { FastifyError, FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { hasZodFastifySchemaValidationErrors, validatorCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { RequestError, requestErrorFromIssues } from '../errors/request-error.ts';

/** The schema as the spec shows it, typed as what the handler really receives: the unvalidated value. */
export function specOnly<S extends z.ZodType>(schema: S): z.ZodType<unknown, unknown> {
  return schema as unknown as z.ZodType<unknown, unknown>;
}

const unchecked = (): boolean => true;

const compileValidator: FastifySchemaCompiler<z.ZodType> = (route) =>
  route.httpPart === 'params' || route.httpPart === 'querystring' ? validatorCompiler(route) : unchecked;

const serializeAsBefore = () => (data: unknown): string => JSON.stringify(data);

export function useZodRouteSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(compileValidator);
  app.setSerializerCompiler(serializeAsBefore);
}

/** Where the provider's validation failed, as the field a client reads when no issue has a path. */
const FIELD_OF_PART: Record<string, string> = { params: 'id', querystring: 'query' };

/** The type provider's validation failure as the RequestError every route family renders; else undefined. */
export function validationRequestError(err: unknown): RequestError | undefined {
  if (!hasZodFastifySchemaValidationErrors(err)) return undefined;
  const issues = err.validation.map((v) => ({
    path: v.instancePath.split('/').filter((p) => p !== ''),
    message: v.message ?? 'invalid',
  }));
  const part = (err as FastifyError).validationContext ?? '';
  return requestErrorFromIssues(issues, { field: FIELD_OF_PART[part] ?? part });
}
