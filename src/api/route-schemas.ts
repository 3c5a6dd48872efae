/**
 * How routes declare their zod schemas (through fastify-type-provider-zod) and what Fastify does with them.
 *
 * - Every declared request schema (params, querystring, a small body) is validated by the type provider's
 *   zod validator before the handler runs; a failure becomes a RequestError naming the field, which each
 *   route family's error handler renders in its own envelope (A1111's, OpenAI's, the video API's).
 * - Except a schema wrapped in `specOnly`: declared for the spec, validated by the route itself. The render
 *   routes' bodies are, and must be: the body gate, the depth and image-size checks (413 naming the image)
 *   and the byte workers that decode images come first, A1111's leniency reads the raw body (unknown keys
 *   kept for the "not applied" report), the Idempotency-Key fingerprint hashes the body as sent, multipart
 *   bodies are read by the route, and each family answers a bad body with its own status and message.
 *   `specOnly` types the value as `unknown`, so no handler mistakes the raw body for a validated one.
 * - Response schemas are for the spec only: answers are serialized with JSON.stringify as before, so a
 *   response of several megabytes of base64 is not walked by zod on the event loop.
 */
import type { FastifyError, FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { hasZodFastifySchemaValidationErrors, validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RequestError, requestErrorFromIssues } from '../errors/request-error.ts';

/** Schemas the routes validate themselves (copies made by specOnly: the schema itself stays validatable). */
const checkedByRoute = new WeakSet<z.ZodType>();

/** The schema as the spec shows it, typed as what the handler really receives: the unvalidated value. */
export function specOnly<S extends z.ZodType>(schema: S): z.ZodType<unknown, unknown> {
  const copy = schema.clone();
  // The description lives in zod's registry, keyed by the instance: the copy keeps it for the spec.
  const meta = z.globalRegistry.get(schema);
  if (meta) z.globalRegistry.add(copy, meta);
  checkedByRoute.add(copy);
  return copy;
}

const unchecked = (): boolean => true;

const compileValidator: FastifySchemaCompiler<z.ZodType> = (route) => (checkedByRoute.has(route.schema) ? unchecked : validatorCompiler(route));

const serializeAsBefore =
  () =>
  (data: unknown): string =>
    JSON.stringify(data);

export function useZodRouteSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(compileValidator);
  app.setSerializerCompiler(serializeAsBefore);
}

/** Where the provider's validation failed, as the field a client reads when no issue has a path. */
const FIELD_OF_PART: Record<string, string> = { params: 'id', querystring: 'query', body: 'body' };

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
