/**
 * Who a piece of shared work is for, and whether they still want it. Each HTTP request runs its handler inside
 * a context naming its client (the API key's name, else the remote address) and an AbortSignal that fires when
 * the client goes away before its answer was sent. The shared queues (the byte pool first) read it to share
 * their slots fairly between clients and to drop work nobody waits for, without every parsing call site passing
 * the request down.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface ClientContext {
  /** `key:<name>` for a named API key, `addr:<remote address>` otherwise. */
  client: string;
  /** Fires when the client has gone (connection closed before the answer). */
  signal: AbortSignal;
  /** The API key's name, recorded as the owner of the renders it starts (none without named keys). */
  owner?: string;
  /** The key's role: a client key has its own room (its renders, its options). */
  role?: 'client' | 'operator';
}

const storage = new AsyncLocalStorage<ClientContext>();

/** Work started outside any request (tests, the CLI, start-up) is shared as one anonymous client. */
const NO_CLIENT: ClientContext = { client: 'local', signal: new AbortController().signal };

export function currentClient(): ClientContext {
  return storage.getStore() ?? NO_CLIENT;
}

export function runAsClient<T>(ctx: ClientContext, fn: () => T): T {
  return storage.run(ctx, fn);
}
