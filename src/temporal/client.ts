/** One Temporal client per process. */
import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';

export interface ClientOptions {
  /** Workflow client interceptors, e.g. tracing's (src/tracing/temporal.ts), which put the span context in headers. */
  workflowInterceptors?: WorkflowClientInterceptor[];
}

export async function connectClient(address: string, namespace: string, opts: ClientOptions = {}): Promise<{ client: Client; connection: Connection }> {
  const connection = await Connection.connect({ address });
  const interceptors = opts.workflowInterceptors?.length ? { interceptors: { workflow: opts.workflowInterceptors } } : {};
  return { client: new Client({ connection, namespace, ...interceptors }), connection };
}
