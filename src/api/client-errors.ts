/**
 * Errors Node's HTTP server meets before any request reaches Fastify: headers too large (431), a request not
 * received in time (408: headers or body trickled), a request that does not parse (400). Node (and Fastify's
 * default handler) answer them with bodies outside every envelope (issue 27 L3); here they are answered in
 * the route family's envelope when the request line was read (OpenAI's on /v1/*), else in A1111's, and the
 * connection is closed: the parser cannot go on after such an error.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { errorBody } from './http-errors.ts';
import { isV1Path, openAiError } from './openai/errors.ts';

interface ClientErrorAnswer {
  status: number;
  message: string;
  field: string;
}

/** What to answer for Node's error code. */
export function clientErrorAnswer(code: string | undefined): ClientErrorAnswer {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'the request was not received in time', field: '' };
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, message: 'the request headers are too large', field: 'headers' };
  return { status: 400, message: 'the request is not valid HTTP', field: '' };
}

/** The whole answer, status line to body, in the envelope of the request's path (undefined when unread). */
export function clientErrorResponse(answer: ClientErrorAnswer, url: string | undefined): string {
  const body = JSON.stringify(
    url !== undefined && isV1Path(url)
      ? openAiError(answer.status, answer.message, answer.field)
      : errorBody('HTTPException', answer.message, { field: answer.field }),
  );
  const reason = http.STATUS_CODES[answer.status] ?? 'Error';
  return [
    `HTTP/1.1 ${answer.status} ${reason}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'X-Content-Type-Options: nosniff',
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** The path of a request already handed to the front on this socket (a body that timed out), if any. */
function urlOnSocket(socket: Socket): string | undefined {
  const res = (socket as Socket & { _httpMessage?: { req?: { url?: string }; headersSent?: boolean } })._httpMessage;
  return res?.req?.url;
}

/** Fastify's `clientErrorHandler`: answer once, in an envelope, then close. */
export function answerClientError(log: FastifyBaseLogger, err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset or already closed socket has nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const answer = clientErrorAnswer(err.code);
  // Debug, not warn: a hostile client can make as many of these as it opens sockets.
  log.debug({ code: err.code, status: answer.status }, 'client error');
  const res = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  // An answer already begun on this socket cannot be followed by another one.
  if (socket.writable && !res?.headersSent) socket.write(clientErrorResponse(answer, urlOnSocket(socket)));
  socket.destroy(err);
}
