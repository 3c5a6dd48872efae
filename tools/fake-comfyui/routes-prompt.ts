/**
 * `POST /prompt` (server.py `post_prompt`): priority number, prompt id rules, the fake's own emulation of
 * ComfyUI's validation (validation.ts) and queueing. Quirks kept from the real server: a JSON array body
 * counts as a dict without keys (400 `no_prompt`, the number still advances), other non-objects and
 * exceptions inside validation are a 500, invalid outputs next to valid ones still answer 200 with
 * `node_errors`, and the queued prompt is the one validation converted in place.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { existsAnnotated } from './files.ts';
import type { QueueItem } from './queue.ts';
import { CANONICAL_UUID, internalError, isObject, parseJsonBody, pyTruthy } from './http-util.ts';
import type { FakeState } from './state.ts';
import { ValidationCrash, validatePrompt } from './validation.ts';

const SENSITIVE_EXTRA_DATA_KEYS = ['auth_token_comfy_org', 'api_key_comfy_org'];

// eslint-disable-next-line max-lines-per-function -- the fake's POST /prompt route with its handler (next line)
export function registerPromptRoute(app: FastifyInstance, state: FakeState): void {
  // eslint-disable-next-line max-lines-per-function -- POST /prompt checked as ComfyUI checks it (validation, node errors, queueing) in ComfyUI's order
  app.post('/prompt', async (req, reply) => {
    let parsed: unknown;
    try {
      parsed = parseJsonBody(req.body);
    } catch {
      return internalError(reply);
    }
    // `"key" in body` on a list tests membership: an array without those strings reads as an empty dict.
    if (Array.isArray(parsed) && !parsed.some((x) => x === 'number' || x === 'front' || x === 'prompt')) parsed = {};
    if (!isObject(parsed)) return internalError(reply);
    const body = parsed;

    let number: number;
    if ('number' in body) {
      const n = typeof body.number === 'number' ? body.number : typeof body.number === 'string' ? Number(body.number) : NaN;
      if (!Number.isFinite(n) || (typeof body.number === 'string' && body.number.trim() === '')) return internalError(reply);
      number = n;
    } else {
      number = state.number;
      if ('front' in body && pyTruthy(body.front)) number = -number;
      state.number++;
    }

    if (!('prompt' in body)) {
      const error = { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} };
      return reply.code(400).send({ error, node_errors: {} });
    }

    let promptId: string;
    if (body.prompt_id === undefined || body.prompt_id === null) promptId = randomUUID();
    else if (typeof body.prompt_id === 'string' && CANONICAL_UUID.test(body.prompt_id)) promptId = body.prompt_id;
    else {
      return reply.code(400).send({
        error: {
          type: 'invalid_prompt_id',
          message: 'prompt_id must be a valid UUID',
          details: 'prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one',
          extra_info: {},
        },
        node_errors: {},
      });
    }

    const fault = state.faults.takePrompt500();
    if (fault && !fault.afterQueue) {
      state.log.warn({ promptId }, 'fault: POST /prompt answers 500');
      return internalError(reply);
    }

    // Validation converts values in place; work on a copy so the request body stays as sent.
    const prompt = structuredClone(body.prompt);
    let verdict;
    try {
      verdict = validatePrompt(
        prompt,
        { objectInfo: state.objectInfo(), fileExists: (ref) => existsAnnotated(state.dirs, ref) },
        body.partial_execution_targets,
      );
    } catch (err) {
      if (err instanceof ValidationCrash) {
        state.log.error({ err: err.message }, 'exception in validation');
        return internalError(reply);
      }
      throw err;
    }

    const extraData: Record<string, unknown> = isObject(body.extra_data) ? { ...body.extra_data } : {};
    if ('client_id' in body) extraData.client_id = body.client_id;

    if (!verdict.ok) {
      state.log.warn({ error: verdict.error }, 'invalid prompt');
      return reply.code(400).send({ error: verdict.error, node_errors: verdict.nodeErrors });
    }
    const sensitive: Record<string, unknown> = {};
    for (const k of SENSITIVE_EXTRA_DATA_KEYS) {
      if (k in extraData) {
        sensitive[k] = extraData[k];
        delete extraData[k];
      }
    }
    extraData.create_time = Date.now();
    const item: QueueItem = { number, promptId, prompt: prompt as Record<string, unknown>, extraData, outputs: verdict.outputs, sensitive };
    state.queue.put(item);
    state.stats.submissions[promptId] = (state.stats.submissions[promptId] ?? 0) + 1;
    if (fault) {
      state.log.warn({ promptId }, 'fault: POST /prompt queued, then answers 500');
      return internalError(reply);
    }
    return reply.send({ prompt_id: promptId, number, node_errors: verdict.nodeErrors });
  });
}
