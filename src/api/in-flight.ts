/**
 * Renders this front is currently waiting on, oldest first: what `/sdapi/v1/progress` counts and what
 * `/sdapi/v1/interrupt` and `/skip` act on (the render currently on the GPU is the oldest one still waiting). Several
 * clients may wait on one render (Idempotency-Key retries attach to it): each `add` is one client, and the
 * render stays listed until the last of them is done.
 */
export interface InFlightRender {
  renderId: string;
  startedAt: number;
  /** A1111 interrupt: the render ends with the images finished so far (the waiting request answers 200). */
  interrupt(): Promise<void>;
  /** A1111 skip: the current image of the batch ends, the next one starts. */
  skip(): Promise<void>;
}

export class InFlight {
  private readonly renders = new Map<string, { render: InFlightRender; clients: number }>();

  private readonly listeners: ((renderId: string) => void)[] = [];

  /** The returned function ends the entry: the render has returned to its client (or failed). */
  add(r: InFlightRender): () => void {
    const entry = this.renders.get(r.renderId);
    if (entry) entry.clients++;
    else this.renders.set(r.renderId, { render: r, clients: 1 });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const e = this.renders.get(r.renderId);
      if (e && --e.clients <= 0) {
        this.renders.delete(r.renderId);
        for (const l of this.listeners) l(r.renderId);
      }
    };
  }

  /** How many clients of this front wait on the render (0 when none). */
  clients(renderId: string): number {
    return this.renders.get(renderId)?.clients ?? 0;
  }

  /** Called with each render id as the last client waiting on it is done (progress goes idle at that moment). */
  onFinished(listener: (renderId: string) => void): void {
    this.listeners.push(listener);
  }

  list(): InFlightRender[] {
    return [...this.renders.values()].map((e) => e.render).sort((a, b) => a.startedAt - b.startedAt);
  }

  get size(): number {
    return this.renders.size;
  }
}
