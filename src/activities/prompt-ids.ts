/**
 * The prompt id of one attempt of one item of a render: a canonical UUID derived from (workflow, run, item,
 * attempt). Nothing needs recording: a later attempt re-derives earlier attempts' ids to re-attach, and an
 * ending render re-derives them to stop what may still run.
 */
import { derivePromptId } from '../comfyui/prompt-id.ts';

export interface RenderExecution {
  workflowId: string;
  runId: string;
}

export function attemptPromptId(exec: RenderExecution, item: number, attempt: number): string {
  return derivePromptId([exec.workflowId, exec.runId, item, attempt]);
}
