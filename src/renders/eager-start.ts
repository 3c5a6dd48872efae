/**
 * Eager workflow start: the start request carries the render's first workflow task back to the worker that
 * asked (no poll round trip, ~4-5 ms of every render, bench/README.md, issue 25). The server hands the task
 * to a worker on the connection that started the workflow, so the start must go through the worker's own
 * connection:
 * - workers in this thread (tests, `workersInProcess`): a Client on their NativeConnection (clientStarter);
 * - `start` mode's worker thread: the front sends the start to the thread over its port, which starts it on
 *   its connection (threadStarter in app/worker-thread.ts, answered by startOnConnection there).
 * The options crossing the port are plain data: the search attributes travel as their pairs.
 */
import { Client, WorkflowExecutionAlreadyStartedError, type ConnectionLike, type WorkflowStartOptions } from '@temporalio/client';
import { TypedSearchAttributes, type SearchAttributePair } from '@temporalio/common';
import type { RenderWorkflow } from '../contracts/workflows.ts';

export type RenderStartOptions = WorkflowStartOptions<RenderWorkflow>;

/** Starts the render eagerly and answers its first run id; a taken id is a WorkflowExecutionAlreadyStartedError. */
export type EagerStarter = (options: RenderStartOptions) => Promise<string>;

/** The start options as plain data (what a MessagePort can carry). */
export interface PlainStartOptions {
  options: Omit<RenderStartOptions, 'typedSearchAttributes'>;
  searchAttributes: SearchAttributePair[];
}

export function toPlain(options: RenderStartOptions): PlainStartOptions {
  const { typedSearchAttributes, ...rest } = options;
  const pairs: SearchAttributePair[] = typedSearchAttributes instanceof TypedSearchAttributes ? typedSearchAttributes.getAll() : (typedSearchAttributes ?? []);
  return { options: rest, searchAttributes: pairs.map(({ key, value }) => ({ key: { name: key.name, type: key.type }, value }) as SearchAttributePair) };
}

export function fromPlain(plain: PlainStartOptions): RenderStartOptions {
  return { ...plain.options, typedSearchAttributes: new TypedSearchAttributes(plain.searchAttributes) };
}

/** Eager starts on the connection of workers in this thread. */
export function clientStarter(client: Client): EagerStarter {
  return async (options) => (await client.workflow.start<RenderWorkflow>('render', { ...options, requestEagerStart: true })).firstExecutionRunId;
}

/** The worker thread's side: a start sent by its front, on the thread's worker connection. */
export function startOnConnection(connection: ConnectionLike, namespace: string): (plain: PlainStartOptions) => Promise<string> {
  const start = clientStarter(new Client({ connection, namespace }));
  return (plain) => start(fromPlain(plain));
}

/** What crosses the port when a start failed: whether the id was taken (the caller then attaches or refuses). */
export interface StartFailure {
  alreadyStarted: boolean;
  message: string;
}

export function toStartFailure(err: unknown): StartFailure {
  return { alreadyStarted: err instanceof WorkflowExecutionAlreadyStartedError, message: err instanceof Error ? err.message : String(err) };
}

export function fromStartFailure(f: StartFailure, workflowId: string): Error {
  return f.alreadyStarted
    ? new WorkflowExecutionAlreadyStartedError(f.message, workflowId, 'render')
    : new Error(`eager start in the worker thread: ${f.message}`);
}
