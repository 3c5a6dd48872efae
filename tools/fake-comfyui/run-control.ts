/**
 * Interrupt and abort signalling for the prompt the fake is running. `interrupt()` is ComfyUI's global
 * `interrupt_processing` flag, seen only where ComfyUI checks it (before each node, on each progress tick);
 * `abort()` ends everything (reset/close) and wakes any sleep, hang or hold.
 */

/** Raised at a check point when the server is being reset or closed: the run ends without a trace. */
export class Aborted extends Error {}
/** `comfy.model_management.InterruptProcessingException`. */
export class Interrupted extends Error {}

export class RunControl {
  aborted = false;
  interruptRequested = false;
  private interruptWaiters = new Set<() => void>();
  private abortWaiters = new Set<() => void>();
  private releaseWaiters = new Set<() => void>();
  private resolveAborted: () => void = () => {};
  /** Settles once, when `abort()` is called. */
  readonly whenAborted: Promise<void> = new Promise((resolve) => {
    this.resolveAborted = resolve;
  });

  interrupt(): void {
    this.interruptRequested = true;
    for (const w of this.interruptWaiters) w();
    this.interruptWaiters.clear();
  }

  /** Ends a `hold()` without an interrupt (`POST /__fake/release`). Returns whether a node was held. */
  release(): boolean {
    const held = this.releaseWaiters.size > 0;
    for (const w of this.releaseWaiters) w();
    this.releaseWaiters.clear();
    return held;
  }

  /** `throw_exception_if_processing_interrupted`. */
  check(): void {
    if (this.aborted) throw new Aborted('aborted');
    if (this.interruptRequested) throw new Interrupted('interrupted');
  }

  abort(): void {
    this.aborted = true;
    this.resolveAborted();
    for (const w of this.abortWaiters) w();
    this.abortWaiters.clear();
  }

  /** Waits `ms` (or one event-loop turn for 0, so HTTP requests such as interrupts get through). */
  sleep(ms: number): Promise<void> {
    return this.wait((done) => {
      const t = ms > 0 ? setTimeout(done, ms) : undefined;
      if (t === undefined) setImmediate(done);
      return () => clearTimeout(t);
    });
  }

  /** A hung node: returns when interrupted (never, with `ignoreInterrupt`); rejects on abort. */
  hang(ignoreInterrupt: boolean): Promise<void> {
    return this.wait((done) => {
      if (ignoreInterrupt) return () => {};
      if (this.interruptRequested) setImmediate(done);
      else this.interruptWaiters.add(done);
      return () => this.interruptWaiters.delete(done);
    });
  }

  /** A long node that cannot be interrupted mid-way: returns on interrupt or release; rejects on abort. */
  hold(): Promise<void> {
    return this.wait((done) => {
      if (this.interruptRequested) setImmediate(done);
      else this.interruptWaiters.add(done);
      this.releaseWaiters.add(done);
      return () => {
        this.interruptWaiters.delete(done);
        this.releaseWaiters.delete(done);
      };
    });
  }

  private wait(arm: (done: () => void) => () => void): Promise<void> {
    if (this.aborted) return Promise.reject(new Aborted('aborted'));
    return new Promise((resolve, reject) => {
      let disarm = () => {};
      const onAbort = () => {
        disarm();
        reject(new Aborted('aborted'));
      };
      disarm = arm(() => {
        disarm();
        this.abortWaiters.delete(onAbort);
        resolve();
      });
      this.abortWaiters.add(onAbort);
    });
  }
}
