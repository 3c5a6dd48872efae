/** One Temporal client per process. */
import { Client, Connection } from '@temporalio/client';

export async function connectClient(address: string, namespace: string): Promise<{ client: Client; connection: Connection }> {
  const connection = await Connection.connect({ address });
  return { client: new Client({ connection, namespace }), connection };
}
