/**
 * The check before `POST /prompt` (see src/comfyui/preflight.ts for what it may refuse and why so little).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { ComfyClient } from '../comfyui/client.ts';
import { preflightGraph } from '../comfyui/preflight.ts';
import { FailureType } from '../contracts/failures.ts';
import type { ObjectInfoCache } from './object-info-cache.ts';
import type { Backend } from '../contracts/render.ts';
import type { RunPromptInput } from '../contracts/activities.ts';

/**
 * Fail fast, non-retryably, only on definite facts (preflight.ts: a node class or a model file this ComfyUI
 * lacks); ComfyUI judges everything else when the prompt is submitted. A refusal is confirmed against a
 * fresh `/object_info` first: the operator may have just installed the file the cached copy lacks.
 */
/** `backend`: the ComfyUI the attempt runs on (bound late: not in the attempt's input). */
export async function validateBeforeSubmit(
  client: ComfyClient,
  input: { graph: RunPromptInput['graph']; backend: Backend },
  cache: ObjectInfoCache,
): Promise<void> {
  if (preflightGraph(input.graph, await cache.get(input.backend.id, client)).ok) return;
  cache.invalidate(input.backend.id);
  const v = preflightGraph(input.graph, await cache.get(input.backend.id, client));
  if (v.ok) return;
  const first = v.problems[0];
  throw ApplicationFailure.create({
    message: [`ComfyUI at ${input.backend.url} cannot run this graph:`, ...v.problems.map((p) => `node ${p.nodeId}: ${p.message}`)].join('\n'),
    type: FailureType.ComfyValidation,
    nonRetryable: true,
    details: [{ nodeErrors: v.nodeErrors, error: v.error, nodeId: first?.nodeId, ...(first?.classType ? { nodeType: first.classType } : {}) }],
  });
}
