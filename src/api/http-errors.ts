/**
 * Every error answer uses A1111's envelope `{error, detail, body, errors}` (clients read `detail`), plus
 * `field` when one input is at fault, so a person can tell what to fix.
 */
import type { FastifyReply } from 'fastify';

export interface ErrorBody {
  error: string;
  detail: string;
  body: string;
  errors: string;
  field?: string;
  [extra: string]: unknown;
}

export function errorBody(error: string, detail: string, extra: Record<string, unknown> = {}): ErrorBody {
  return { error, detail, body: '', errors: '', ...extra };
}

export function sendError(reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}
