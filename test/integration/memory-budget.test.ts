/**
 * The memory budget of docs/durability.md, checked on what `npm start` runs (the compiled service, its worker
 * thread, scripts/run.sh's settings): 100 clients each sending a ~2 MB img2img at once, the RSS of every node
 * process of the service summed (bench/memory.ts, the same run `npm run bench` prints), at most 300 MB.
 * Memory, unlike time, is steady enough across machines to be a test; the time budgets stay in the bench as
 * same-run ratios. MEMORY_BUDGET_MB can only lower the bound (to see this test fail: MEMORY_BUDGET_MB=150).
 */
import { describe, expect, it } from 'vitest';
import { createContext } from '../../bench/lib/context.ts';
import { mb } from '../../bench/lib/report.ts';
import { Cleanups, buildDist } from '../../bench/lib/stack.ts';
import { BUDGET_BYTES, runMemory } from '../../bench/memory.ts';

const budget = Math.min(BUDGET_BYTES, Number(process.env.MEMORY_BUDGET_MB ?? Infinity) * 1024 * 1024);

describe('memory budget of start', () => {
  it(`100 concurrent 2 MB img2img: all node processes of the service together peak at ≤ ${mb(budget)}`, async () => {
    buildDist();
    const cleanups = new Cleanups();
    try {
      const ctx = createContext(false, Date.now() + 420_000, cleanups);
      const m = await runMemory(ctx, { timeoutMs: 300_000 });
      process.stdout.write(`memory budget: ${m.result.figure}\n${m.result.lines.join('\n')}\n`);
      // The larger of the sampled sum and each process's own kernel peak (VmHWM) summed: no peak between samples slips by.
      expect(Math.max(m.peak, m.hwm), `peak ${mb(m.peak)}, VmHWM summed ${mb(m.hwm)}`).toBeLessThanOrEqual(budget);
      // A pile-up cut short (clients timed out) would measure less than the budget is about.
      expect(m.ok, 'every client got its images').toBe(m.clients);
      expect(m.clients).toBe(100);
    } finally {
      await cleanups.runAll();
    }
  }, 480_000);
});
