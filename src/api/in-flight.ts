/**
 * Renders this front is currently waiting on, oldest first: what `/sdapi/v1/progress` counts and what
 * `/sdapi/v1/interrupt` cancels (the render currently on the GPU is the oldest one still waiting). Several
 * clients may wait on one render (Idempotency-Key retries attach to it): each `add` is one client, and the
 * render stays listed until the last of them is done.
 */
export interface InFlightRender {
  renderId: string;
  startedAt: number;
  cancel(): Promise<void>;
}

export class InFlight {
  private readonly renders = new Map<string, { render: InFlightRender; clients: number }>();

  add(r: InFlightRender): () => void {
    const entry = this.renders.get(r.renderId);
    if (entry) entry.clients++;
    else this.renders.set(r.renderId, { render: r, clients: 1 });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const e = this.renders.get(r.renderId);
      if (e && --e.clients <= 0) this.renders.delete(r.renderId);
    };
  }

  /** How many clients of this front wait on the render (0 when none). */
  clients(renderId: string): number {
    return this.renders.get(renderId)?.clients ?? 0;
  }

  list(): InFlightRender[] {
    return [...this.renders.values()].map((e) => e.render).sort((a, b) => a.startedAt - b.startedAt);
  }

  get size(): number {
    return this.renders.size;
  }
}
