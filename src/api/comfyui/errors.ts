/** ComfyUI's own error shapes: `POST /prompt`'s 400 `{error: {type, message, details, extra_info}, node_errors}`. */
import type { FastifyReply } from 'fastify';

export interface ComfyErrorBody {
  error: { type: string; message: string; details: string; extra_info: Record<string, unknown> };
  node_errors: Record<string, unknown>;
}

export function comfyError(
  type: string,
  message: string,
  details = '',
  extraInfo: Record<string, unknown> = {},
  nodeErrors: Record<string, unknown> = {},
): ComfyErrorBody {
  return { error: { type, message, details, extra_info: extraInfo }, node_errors: nodeErrors };
}

export function sendComfyError(reply: FastifyReply, status: number, body: ComfyErrorBody): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}
