/**
 * Custom search attributes that make renders findable in the Temporal UI and `temporal workflow list
 * --query`. Registered by the embedded dev server at start and by `ensureSearchAttributes` on any server.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const RENDER_MODEL = defineSearchAttributeKey('RenderModel', SearchAttributeType.KEYWORD);
export const RENDER_KIND = defineSearchAttributeKey('RenderKind', SearchAttributeType.KEYWORD);
export const RENDER_BACKEND = defineSearchAttributeKey('RenderBackend', SearchAttributeType.KEYWORD);
export const RENDER_REPLAY_OF = defineSearchAttributeKey('RenderReplayOf', SearchAttributeType.KEYWORD);
/**
 * What happened (src/contracts/outcome.ts `outcomeTags`): `completed`, `partial`, `interrupted`, `skipped`,
 * `blank`; a failed render `failed` and `failed:<class>` (ComfyExecution, ComfyStall, Timeout, …). A list, so
 * `RenderOutcome = 'blank'` finds a partial render with a black image too. Set when the render ends.
 */
export const RENDER_OUTCOME = defineSearchAttributeKey('RenderOutcome', SearchAttributeType.KEYWORD_LIST);

/** The name of the API key that started the render (src/renders/owner.ts). */
export const RENDER_OWNER = defineSearchAttributeKey('RenderOwner', SearchAttributeType.KEYWORD);

/**
 * The client the render was started for (`key:<name>`, else `addr:<remote address>`, src/fair/client-context.ts):
 * admission counts each client's waiting renders by it (src/renders/admission.ts).
 */
export const RENDER_CLIENT = defineSearchAttributeKey('RenderClient', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [RENDER_MODEL, RENDER_KIND, RENDER_BACKEND, RENDER_REPLAY_OF, RENDER_OWNER, RENDER_OUTCOME, RENDER_CLIENT] as const;

/** The visibility query for renders waiting or running on a task queue (of one client: its RenderClient). */
export function waitingRendersQuery(taskQueue: string, client?: string): string {
  const base = `WorkflowType = 'render' AND ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replace(/'/g, '')}'`;
  return client === undefined ? base : `${base} AND RenderClient = '${client.replace(/['\\]/g, '')}'`;
}
