/**
 * Everything one fake ComfyUI process holds in memory (its `PromptServer` + `PromptQueue` + executor), and
 * the operations the routes share: interrupts, reset, shutdown. All of it is lost on restart by design.
 */
import type { Logger } from 'pino';
import { Executor, RunControl, emptyStats } from './executor.ts';
import type { FakeStats } from './executor.ts';
import type { DataDirs } from './files.ts';
import { Faults } from './faults.ts';
import type { FaultState } from './faults.ts';
import { withInputFiles, withProfileFiles } from './fixture.ts';
import type { RawObjectInfo } from './node-schema.ts';
import { PromptQueue } from './queue.ts';
import { Worker } from './worker.ts';
import { WsHub } from './ws-hub.ts';

export interface FakeStateOptions {
  dirs: DataDirs;
  objectInfo: RawObjectInfo;
  stepMs: number;
  renderMs: number;
  log: Logger;
  /** Add the model files of the registered profiles to the loaders' lists (`withProfileFiles`). */
  profileFiles?: boolean;
}

/** `GET /__fake/stats`. */
export interface FakeStatsSnapshot extends FakeStats {
  queue: { running: string[]; pending: string[] };
  historySize: number;
  workerAlive: boolean;
  websocket: { open: number; registered: string[]; framesSent: number; framesDropped: number; connections: number };
  faults: FaultState;
}

export class FakeState {
  readonly dirs: DataDirs;
  readonly queue: PromptQueue;
  readonly hub: WsHub;
  readonly faults = new Faults();
  readonly log: Logger;
  stats: FakeStats = emptyStats();
  /** `PromptServer.number`: the priority counter, restarting at 0 with the process. */
  number = 0;
  private readonly baseObjectInfo: RawObjectInfo;
  private readonly profileFiles: boolean;
  private readonly executor: Executor;
  private worker: Worker;

  constructor(opts: FakeStateOptions) {
    this.dirs = opts.dirs;
    this.log = opts.log;
    this.baseObjectInfo = opts.objectInfo;
    this.profileFiles = opts.profileFiles ?? false;
    this.queue = new PromptQueue(() => this.hub.sendStatus());
    this.hub = new WsHub({ queueRemaining: () => this.queue.remaining(), onFrameSent: () => this.faults.countFrame() }, opts.log);
    this.executor = new Executor({
      hub: this.hub,
      dirs: this.dirs,
      faults: this.faults,
      objectInfo: () => this.objectInfo(),
      stepMs: opts.stepMs,
      renderMs: opts.renderMs,
      log: opts.log,
      stats: this.stats,
    });
    this.worker = this.startWorker();
  }

  private startWorker(): Worker {
    return new Worker({ queue: this.queue, executor: this.executor, hub: this.hub, faults: this.faults, stats: this.stats, log: this.log }, new RunControl());
  }

  /**
   * The live `/object_info`: the fixture with the image combos listing the input directory and, unless the
   * caller serves an object_info of its own, the registered profiles' model files in the loaders' lists.
   */
  objectInfo(): RawObjectInfo {
    return withInputFiles(this.profileFiles ? withProfileFiles(this.baseObjectInfo) : this.baseObjectInfo, this.dirs.input);
  }

  /** `nodes.interrupt_processing()`: the global flag; affects only a running prompt. */
  interruptGlobal(): void {
    this.stats.interrupts++;
    this.worker.control.interrupt();
  }

  /** Interrupts only when `promptId` is the running prompt (targeted interrupt, jobs cancel). */
  interruptIfRunning(promptId: string): boolean {
    if (!this.queue.runningIds().includes(promptId)) return false;
    this.interruptGlobal();
    return true;
  }

  /** Ends a held node (`POST /__fake/release`). */
  release(): boolean {
    return this.worker.control.release();
  }

  freeMemory(): void {
    this.queue.setFlag('free_memory', true);
  }

  workerAlive(): boolean {
    return this.worker.alive;
  }

  statsSnapshot(): FakeStatsSnapshot {
    return {
      ...structuredClone(this.stats),
      queue: { running: this.queue.runningIds(), pending: this.queue.queue.map((i) => i.promptId) },
      historySize: this.queue.history.size,
      workerAlive: this.worker.alive,
      websocket: { open: this.hub.openSockets(), registered: [...this.hub.sockets.keys()], ...this.hub.counters },
      faults: structuredClone(this.faults.state),
    };
  }

  /**
   * Back to a just-started server without restarting the process: the running prompt is abandoned silently
   * (no events, no history), queue, history, caches, stats, faults and the priority counter are cleared,
   * a dead worker is replaced. Files and WebSocket connections stay.
   */
  async reset(): Promise<void> {
    this.worker.control.abort();
    this.queue.wake();
    await this.worker.done();
    this.queue.clearAll();
    this.executor.reset();
    this.faults.reset();
    const fresh = emptyStats();
    for (const k of Object.keys(fresh) as Array<keyof FakeStats>) (this.stats as unknown as Record<string, unknown>)[k] = fresh[k];
    this.number = 0;
    this.hub.clientId = null;
    this.hub.lastNodeId = null;
    this.worker = this.startWorker();
    this.hub.sendStatus();
  }

  /** Stops the worker (abandoning a running prompt) and drops all sockets. */
  async stop(): Promise<void> {
    this.worker.control.abort();
    this.queue.wake();
    await this.worker.done();
    this.hub.dropAll();
  }
}
