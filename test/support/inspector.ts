/**
 * A client of node's inspector protocol (the Chrome DevTools protocol over a WebSocket), for fault tests that
 * act on one thread of a service: pause the front's main thread (its event loop frozen, its other threads
 * running on), or make `start`'s worker thread crash or hang. The service runs with `--inspect=127.0.0.1:0` and prints
 * its address on stderr; nothing in the service knows about the tests.
 */
import WebSocket from 'ws';

/** The last inspector address a service printed (a restart prints a new one). */
export function inspectorUrl(output: string): string | undefined {
  const all = [...output.matchAll(/Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/g)];
  return all.at(-1)?.[1];
}

type Handler = (params: Record<string, unknown>) => void;

export class Inspector {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  private readonly handlers = new Map<string, Handler[]>();

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: WebSocket.RawData) => {
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a text frame
      const msg = JSON.parse(data.toString()) as {
        id?: number;
        result?: unknown;
        error?: { message: string };
        method?: string;
        params?: Record<string, unknown>;
      };
      if (msg.id !== undefined) {
        const p = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if (msg.error) p?.reject(new Error(msg.error.message));
        else p?.resolve(msg.result);
      } else if (msg.method) {
        for (const h of this.handlers.get(msg.method) ?? []) h(msg.params ?? {});
      }
    });
  }

  static connect(url: string): Promise<Inspector> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.once('open', () => resolve(new Inspector(ws)));
      ws.once('error', reject);
    });
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  on(event: string, handler: Handler): void {
    this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler]);
  }

  /** Resolves with the next `event` whose params satisfy `match`. */
  next(event: string, match: (params: Record<string, unknown>) => boolean = () => true): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      let done = false;
      this.on(event, (p) => {
        if (!done && match(p)) {
          done = true;
          resolve(p);
        }
      });
    });
  }

  /**
   * Make worker thread `threadId` crash as a thread does on an uncaught error. Resolves once the error is
   * scheduled. (The inspector titles a worker `[worker <threadId>]`; module loader threads are workers too.)
   */
  async crashWorker(threadId: number): Promise<void> {
    await this.evaluateInWorker(threadId, "setImmediate(() => { throw new Error('fault test: the worker thread crashes') })");
  }

  /**
   * Make worker thread `threadId` hang: a busy loop from its next turn on, so it exists but runs nothing else
   * (answers no message, sends no heartbeat), as a thread stuck in a bug would. Resolves once it is scheduled.
   */
  async hangWorker(threadId: number): Promise<void> {
    await this.evaluateInWorker(threadId, 'setImmediate(() => { for (;;) {} })');
  }

  private async evaluateInWorker(threadId: number, expression: string): Promise<void> {
    const attached = this.next('NodeWorker.attachedToWorker', (p) => (p.workerInfo as { title?: string }).title === `[worker ${threadId}]`);
    await this.send('NodeWorker.enable', { waitForDebuggerOnStart: false });
    const { sessionId } = (await attached) as { sessionId: string };
    await this.send('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression } }) });
    await this.send('NodeWorker.disable');
  }

  close(): void {
    this.ws.close();
  }
}
