/**
 * Fault injection for tests (`POST /__fake/faults`). Each fault reproduces a failure seen with the real
 * server: hung nodes (optionally deaf to interrupts), slow sampling, 500s from `POST /prompt`, dropped
 * WebSockets, CUDA OOM / node exceptions, and the worker thread dying with an item stuck in `queue_running`.
 */
import { z } from 'zod';

const count = z.number().int().positive();

export const faultsBodySchema = z.strictObject({
  /**
   * The next `count` prompts (default 1; unlimited when only `nodeClass` is given) hang inside a node: the
   * first executed node of class `nodeClass`, or the first executed node. After its `executing` event
   * nothing more is sent until an interrupt arrives; with `ignoreInterrupt` not even that ends it (only
   * `/__fake/reset` or a restart does).
   */
  hang: z
    .strictObject({ count: count.optional(), nodeClass: z.string().min(1).optional(), ignoreInterrupt: z.boolean().optional() })
    .nullable()
    .optional(),
  /** Overrides `--step-ms` / `--render-ms` until cleared. */
  slow: z.strictObject({ stepMs: z.number().int().nonnegative().optional(), renderMs: z.number().int().nonnegative().optional() }).nullable().optional(),
  /** The next `count` `POST /prompt` answer 500; with `afterQueue` the prompt is queued first (a lost reply). */
  promptHttp500: z
    .strictObject({ count: count.default(1), afterQueue: z.boolean().default(false) })
    .nullable()
    .optional(),
  /** Terminate every WebSocket now (`afterEvents` omitted or 0) or after that many more frames are sent. */
  dropWebSocket: z.strictObject({ afterEvents: z.number().int().nonnegative().optional() }).nullable().optional(),
  /**
   * The next `count` (default 1) executions of a matching node raise: `node` is a class_type or
   * `first-sampler` (KSampler, KSamplerAdvanced, SamplerCustomAdvanced). `oom` uses ComfyUI's OOM text.
   */
  executionError: z
    .strictObject({
      type: z.enum(['oom', 'exception']),
      node: z.string().min(1).default('first-sampler'),
      count: count.default(1),
      message: z.string().optional(),
    })
    .nullable()
    .optional(),
  /** The worker dies when it takes its next item: that item stays in `queue_running` forever. */
  workerDead: z.boolean().optional(),
  /**
   * Long nodes ComfyUI cannot interrupt mid-way (an upscale, a VAE decode): each entry holds the first node
   * it matches, after its `executing` event, until an interrupt is requested or `POST /__fake/release`;
   * then the node finishes normally, so an interrupt lands at the next node as on the real server. Replaces
   * the pending list; `null` clears it.
   */
  hold: z
    .array(z.strictObject({ promptId: z.string().optional(), nodeId: z.string().optional(), nodeClass: z.string().optional() }))
    .nullable()
    .optional(),
  /**
   * Model loads at a cost (the GPU-sharing benchmark): before a prompt runs, the model files its loaders name that
   * are not in VRAM are loaded in `coldMs` when nothing was loaded (after `/free`, a restart) or `warmMs` when
   * another model was (which it then evicts: one image model fits the card). Counted in stats `modelLoads`.
   */
  modelLoad: z.strictObject({ coldMs: z.number().int().nonnegative(), warmMs: z.number().int().nonnegative() }).nullable().optional(),
});

export type FaultsBody = z.input<typeof faultsBodySchema>;

export interface HangFault {
  remaining: number | null;
  nodeClass?: string;
  ignoreInterrupt: boolean;
}

export interface ExecutionErrorFault {
  type: 'oom' | 'exception';
  node: string;
  remaining: number;
  message?: string;
}

export interface HoldFault {
  promptId?: string;
  nodeId?: string;
  nodeClass?: string;
}

export interface FaultState {
  hang: HangFault | null;
  slow: { stepMs?: number; renderMs?: number } | null;
  promptHttp500: { remaining: number; afterQueue: boolean } | null;
  dropWebSocket: { afterEvents: number } | null;
  executionError: ExecutionErrorFault | null;
  workerDead: boolean;
  hold: HoldFault[];
  modelLoad: { coldMs: number; warmMs: number } | null;
}

export const SAMPLER_CLASSES = new Set(['KSampler', 'KSamplerAdvanced', 'SamplerCustomAdvanced']);

export class Faults {
  state: FaultState = Faults.empty();

  static empty(): FaultState {
    return { hang: null, slow: null, promptHttp500: null, dropWebSocket: null, executionError: null, workerDead: false, hold: [], modelLoad: null };
  }

  reset(): void {
    this.state = Faults.empty();
  }

  /** Merges a parsed body into the state; a key set to null clears that fault. Returns whether to drop sockets now. */
  apply(body: z.output<typeof faultsBodySchema>): { dropNow: boolean } {
    let dropNow = false;
    if (body.hang !== undefined) {
      this.state.hang = body.hang && {
        remaining: body.hang.count ?? (body.hang.nodeClass ? null : 1),
        ...(body.hang.nodeClass ? { nodeClass: body.hang.nodeClass } : {}),
        ignoreInterrupt: body.hang.ignoreInterrupt ?? false,
      };
    }
    if (body.slow !== undefined) this.state.slow = body.slow;
    if (body.promptHttp500 !== undefined) {
      this.state.promptHttp500 = body.promptHttp500 && { remaining: body.promptHttp500.count, afterQueue: body.promptHttp500.afterQueue };
    }
    if (body.dropWebSocket !== undefined) {
      const after = body.dropWebSocket?.afterEvents ?? 0;
      if (body.dropWebSocket && after === 0) dropNow = true;
      this.state.dropWebSocket = body.dropWebSocket && after > 0 ? { afterEvents: after } : null;
    }
    if (body.executionError !== undefined) {
      this.state.executionError = body.executionError && {
        type: body.executionError.type,
        node: body.executionError.node,
        remaining: body.executionError.count,
        ...(body.executionError.message !== undefined ? { message: body.executionError.message } : {}),
      };
    }
    if (body.workerDead !== undefined) this.state.workerDead = body.workerDead;
    if (body.modelLoad !== undefined) this.state.modelLoad = body.modelLoad;
    if (body.hold !== undefined) this.state.hold = (body.hold ?? []).map((h) => ({ ...h }));
    return { dropNow };
  }

  /** Whether this `POST /prompt` fails with 500, and whether it is queued first. Consumes one. */
  takePrompt500(): { afterQueue: boolean } | undefined {
    const f = this.state.promptHttp500;
    if (!f) return undefined;
    f.remaining--;
    if (f.remaining <= 0) this.state.promptHttp500 = null;
    return { afterQueue: f.afterQueue };
  }

  /** Counts one sent frame; true when the sockets must be dropped now. */
  countFrame(): boolean {
    const f = this.state.dropWebSocket;
    if (!f) return false;
    f.afterEvents--;
    if (f.afterEvents > 0) return false;
    this.state.dropWebSocket = null;
    return true;
  }

  /** The hang to apply to this node, consuming one prompt's worth. `firstInPrompt`: first executed node. */
  takeHang(classType: string, firstInPrompt: boolean): HangFault | undefined {
    const f = this.state.hang;
    if (!f) return undefined;
    const matches = f.nodeClass ? f.nodeClass === classType : firstInPrompt;
    if (!matches) return undefined;
    if (f.remaining !== null) {
      f.remaining--;
      if (f.remaining <= 0) this.state.hang = null;
    }
    return f;
  }

  /** The execution error to raise at this node, consuming one. `firstSampler`: first sampler of the prompt. */
  takeExecutionError(classType: string, firstSampler: boolean): ExecutionErrorFault | undefined {
    const f = this.state.executionError;
    if (!f) return undefined;
    const matches = f.node === 'first-sampler' ? firstSampler : f.node === classType;
    if (!matches) return undefined;
    f.remaining--;
    if (f.remaining <= 0) this.state.executionError = null;
    return f;
  }

  /** Whether this node is held (consuming the first matching entry). */
  takeHold(promptId: string, nodeId: string, classType: string): boolean {
    const i = this.state.hold.findIndex(
      (h) =>
        (h.promptId === undefined || h.promptId === promptId) &&
        (h.nodeId === undefined || h.nodeId === nodeId) &&
        (h.nodeClass === undefined || h.nodeClass === classType),
    );
    if (i < 0) return false;
    this.state.hold.splice(i, 1);
    return true;
  }

  stepMs(dflt: number): number {
    return this.state.slow?.stepMs ?? dflt;
  }

  renderMs(dflt: number): number {
    return this.state.slow?.renderMs ?? dflt;
  }
}
