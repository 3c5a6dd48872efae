/**
 * Request body parsing as lenient as A1111's FastAPI front, because clients rely on it:
 * - a body is JSON whatever its content type says (Node's fetch with a string body sends `text/plain`,
 *   some clients send none at all);
 * - an empty body is no body, whatever the content type: webuiapi and others POST `/interrupt`, `/skip` and
 *   the `refresh-*` routes with `content-type: application/json` and nothing after it.
 * Invalid JSON still fails (400 naming the body) through the error handler.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

export function registerLenientBodyParsers(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'ignore');
  const parse = (req: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void => {
    const text = String(body);
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    json(req, text, done);
  };
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string' }, parse);
  // Any other content type, and none at all (Fastify hands a body without a content type to the catch-all).
  app.addContentTypeParser('*', { parseAs: 'string' }, parse);
}
