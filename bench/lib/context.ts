/**
 * What benchmarks share in one run: the Temporal dev server, and a "single" stack (one in-process fake
 * ComfyUI at zero render time + comfy-durable with that one backend) reused by the benchmarks that do not
 * need their own. Started lazily, torn down by the runner.
 */
import type { Client } from '@temporalio/client';
import type { FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { TestTemporal } from '../../test/support/temporal.ts';
import { Cleanups, startBenchService, startFake, startTemporal, type BenchService } from './stack.ts';
import { nowMs } from './report.ts';

export const MODEL = 'imagegen-flux-schnell';

export interface SingleStack {
  fake: FakeComfyUI;
  svc: BenchService;
  /** Epoch ms (sub-ms) at which the fake sent `executing {node: null}` for a prompt id (history already written). */
  comfyDoneAt: Map<string, number>;
  /** The prompt ids the fake ran for a render (from `extra_data.comfy_durable.render_id`). */
  promptIdsFor(renderId: string): string[];
  /** `execution_success` timestamp (epoch ms) of a prompt from the fake's history messages. */
  executionSuccessAt(promptId: string): number | undefined;
}

export interface BenchContext {
  quick: boolean;
  /** `--smoke` (implies quick): a handful of samples per benchmark, to prove the bench still runs (test suite). */
  smoke: boolean;
  cleanups: Cleanups;
  /** Epoch ms after which a benchmark must wrap up (every loop is also bounded in count). */
  deadline: number;
  temporal(): Promise<{ temporal: TestTemporal; client: Client }>;
  single(): Promise<SingleStack>;
  /** Memoised start of a benchmark's own stack, so --quick can start them all at once up front. */
  lazy<T>(key: string, start: () => Promise<T>): Promise<T>;
}

export function createContext(quick: boolean, deadline: number, cleanups: Cleanups, smoke = false): BenchContext {
  let temporalP: ReturnType<BenchContext['temporal']> | undefined;
  let singleP: Promise<SingleStack> | undefined;
  const lazies = new Map<string, Promise<unknown>>();
  const ctx: BenchContext = {
    lazy: <T>(key: string, start: () => Promise<T>): Promise<T> => {
      let p = lazies.get(key) as Promise<T> | undefined;
      if (!p) {
        p = start();
        lazies.set(key, p);
      }
      return p;
    },
    quick,
    smoke,
    cleanups,
    deadline,
    temporal: () => (temporalP ??= startTemporal(cleanups)),
    single: () =>
      (singleP ??= (async () => {
        const { temporal } = await ctx.temporal();
        const fake = await startFake(cleanups);
        const comfyDoneAt = hookExecutingNull(fake);
        const svc = await startBenchService(cleanups, { temporalAddress: temporal.address, comfyUrl: fake.url });
        return {
          fake,
          svc,
          comfyDoneAt,
          promptIdsFor: (renderId) => {
            const ids: string[] = [];
            for (const [id, item] of fake.state.queue.history) {
              const extra = (item.prompt as unknown[])[3] as { comfy_durable?: { render_id?: string } } | undefined;
              if (extra?.comfy_durable?.render_id === renderId) ids.push(id);
            }
            return ids;
          },
          executionSuccessAt: (promptId) => {
            const item = fake.state.queue.history.get(promptId);
            const msgs = (item?.status as { messages?: Array<[string, { timestamp?: number }]> } | undefined)?.messages ?? [];
            return msgs.find(([ev]) => ev === 'execution_success')?.[1].timestamp;
          },
        };
      })()),
  };
  return ctx;
}

/**
 * Records when the fake sends `executing {node: null, prompt_id}`: ComfyUI's "done, history written"
 * signal. A runtime wrapper around this process's fake, not a change to it.
 */
function hookExecutingNull(fake: FakeComfyUI): Map<string, number> {
  const done = new Map<string, number>();
  const hub = fake.state.hub;
  const original = hub.send.bind(hub);
  hub.send = (event: string, data: unknown, sid?: string | null): void => {
    if (event === 'executing' && data && typeof data === 'object' && (data as { node?: unknown }).node === null) {
      const pid = (data as { prompt_id?: unknown }).prompt_id;
      if (typeof pid === 'string') done.set(pid, nowMs());
    }
    original(event, data, sid);
  };
  return done;
}
