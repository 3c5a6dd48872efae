/**
 * Request body parsing as lenient as A1111's FastAPI front, because clients rely on it:
 * - a body is JSON whatever its content type says (Node's fetch with a string body sends `text/plain`,
 *   some clients send none at all);
 * - an empty body is no body, whatever the content type: webuiapi and others POST `/interrupt`, `/skip` and
 *   the `refresh-*` routes with `content-type: application/json` and nothing after it.
 * - an empty `Content-Type:` header is no content type (A1111 parses the body as JSON; Fastify would 415);
 * - a body sent to a route that does not exist is not parsed at all: the answer is the 404, not a 400 about
 *   the body (a form or multipart body to a mistyped URL).
 * Invalid JSON still fails (400 naming the body) through the error handler.
 * A body of `offLoopFromBytes` or more is counted (values, nesting: json-scan.ts) and parsed in a byte worker,
 * as Fastify's JSON parser would (`__proto__` refused, the same 400 for what is not JSON): the event loop
 * never parses it, and the front never holds its text.
 */
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import { InvalidJsonBody, parseJsonOffLoop } from '../bytes/off-loop.ts';
import { decodeTurn } from './body-gate.ts';
import { asClientOf } from './clients.ts';
import { MAX_JSON_VALUES, scanJsonShape } from '../bytes/json-scan.ts';

export function registerLenientBodyParsers(app: FastifyInstance, opts: { offLoopFromBytes: number }): void {
  const json = app.getDefaultJsonParser('error', 'ignore');
  const parse = (req: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void => {
    if (req.is404) {
      done(null, undefined);
      return;
    }
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
    if (isBlank(bytes)) {
      done(null, undefined);
      return;
    }
    if (bytes.length < opts.offLoopFromBytes) {
      // Small enough to count on the loop (linear, under a millisecond): a few hundred KB of `0,0,0,…` would
      // otherwise become a hundred thousand values, and as many validation issues.
      try {
        // Values only: nesting in a small body is refused after the parse, by the shape walk naming the field.
        scanJsonShape(bytes, MAX_JSON_VALUES, Number.MAX_SAFE_INTEGER);
      } catch (err) {
        done(err as Error);
        return;
      }
      void json(req, bytes.toString('utf8'), done);
      return;
    }
    // In its turn (body-gate.ts: of the large bodies read at once, only a few are parsed and decoded at once), and
    // as the request's client: the byte pool shares its workers between clients, and drops a parse nobody waits for.
    decodeTurn(req)
      .then(() => asClientOf(req, () => parseJsonOffLoop(bytes)))
      .then(
        (value) => done(null, value),
        (err: Error) => done(err instanceof InvalidJsonBody ? new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY() : err),
      );
  };
  app.addHook('onRequest', (req, _reply, done) => {
    const type = req.headers['content-type'];
    if (type !== undefined && type.trim() === '') delete req.headers['content-type'];
    done();
  });
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'buffer' }, parse);
  // Any other content type, and none at all (Fastify hands a body without a content type to the catch-all).
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parse);
}

/** Only JSON whitespace (what `String.trim() === ''` decided, without copying a large body to a string). */
function isBlank(bytes: Buffer): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) return false;
  return true;
}
