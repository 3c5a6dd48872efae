/**
 * One view of a prompt's state, reconciled from the jobs API, `/history/{id}` and `/queue`.
 */
import type { ComfyFileRef } from './graph.ts';
import { isOutOfMemory, type ExecutionErrorInfo } from './errors.ts';
import { fileRefSchema, type HistoryItem, type HistoryOutputs } from './schemas.ts';

/** A file from history outputs, with the node and ui key that reported it. */
export interface OutputFile extends ComfyFileRef {
  nodeId: string;
  /** `images`, `audio`, `files`, ... (SaveVideo reports videos under `images`). */
  key: string;
}

export type PromptStatus =
  | { state: 'pending' }
  | { state: 'running' }
  | { state: 'success'; outputs: HistoryOutputs; files: OutputFile[]; startedAt?: number; finishedAt?: number }
  | { state: 'error'; error: ExecutionErrorInfo; outputs: HistoryOutputs }
  | { state: 'interrupted'; nodeId?: string; outputs: HistoryOutputs }
  /** ComfyUI never saw the prompt, or restarted and lost it. */
  | { state: 'unknown' };

export type TerminalPromptStatus = Extract<PromptStatus, { state: 'success' | 'error' | 'interrupted' }>;

export function isTerminal(s: PromptStatus): s is TerminalPromptStatus {
  return s.state === 'success' || s.state === 'error' || s.state === 'interrupted';
}

/** Every `{filename, subfolder, type}` entry in the outputs, in node order then key order. */
export function extractFiles(outputs: HistoryOutputs): OutputFile[] {
  const files: OutputFile[] = [];
  for (const [nodeId, ui] of Object.entries(outputs)) {
    for (const [key, value] of Object.entries(ui)) {
      if (!Array.isArray(value)) continue;
      for (const v of value) {
        const f = fileRefSchema.safeParse(v);
        if (f.success) files.push({ nodeId, key, filename: f.data.filename, subfolder: f.data.subfolder, type: f.data.type });
      }
    }
  }
  return files;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
}

/** Normalise `execution_error` data (from a WS event, a history message or a job's `execution_error`). */
export function executionErrorInfo(promptId: string, data: Record<string, unknown>): ExecutionErrorInfo {
  const exceptionType = str(data['exception_type']) ?? 'unknown';
  const exceptionMessage = str(data['exception_message']) ?? '';
  return {
    promptId: str(data['prompt_id']) ?? promptId,
    nodeId: str(data['node_id']),
    nodeType: str(data['node_type']),
    exceptionType,
    exceptionMessage,
    traceback: Array.isArray(data['traceback']) ? data['traceback'].filter((x): x is string => typeof x === 'string') : [],
    executed: Array.isArray(data['executed']) ? data['executed'].map(String) : [],
    isOutOfMemory: isOutOfMemory(exceptionType, exceptionMessage),
    timestamp: typeof data['timestamp'] === 'number' ? data['timestamp'] : undefined,
  };
}

/**
 * Decide a finished prompt's outcome from its history item. `status.messages` wins over `status_str`: on
 * one path (a dependency cycle found at execution time) ComfyUI emits `execution_error` but still reports
 * success.
 */
export function statusFromHistory(promptId: string, item: HistoryItem): TerminalPromptStatus {
  const outputs = item.outputs;
  const messages = item.status?.messages ?? [];
  let startedAt: number | undefined;
  let finishedAt: number | undefined;
  for (const [name, data] of messages) {
    const ts = typeof data['timestamp'] === 'number' ? data['timestamp'] : undefined;
    if (name === 'execution_start') startedAt = ts;
    if (name === 'execution_error' && str(data['exception_type']) !== 'ExecutionBlocked') {
      return { state: 'error', error: executionErrorInfo(promptId, data), outputs };
    }
    if (name === 'execution_interrupted') {
      const nodeId = str(data['node_id']);
      return nodeId !== undefined ? { state: 'interrupted', nodeId, outputs } : { state: 'interrupted', outputs };
    }
    if (name === 'execution_success') finishedAt = ts;
  }
  // No status at all: releases before status tracking only wrote history for completed prompts.
  if (!item.status || item.status.status_str === 'success') {
    const s: TerminalPromptStatus = { state: 'success', outputs, files: extractFiles(outputs) };
    if (startedAt !== undefined) s.startedAt = startedAt;
    if (finishedAt !== undefined) s.finishedAt = finishedAt;
    return s;
  }
  return {
    state: 'error',
    error: {
      promptId,
      nodeId: undefined,
      nodeType: undefined,
      exceptionType: 'unknown',
      exceptionMessage: `ComfyUI reported status "${item.status.status_str}" without an error message`,
      traceback: [],
      executed: [],
      isOutOfMemory: false,
      timestamp: undefined,
    },
    outputs,
  };
}
