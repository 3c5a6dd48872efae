/**
 * 5. Workflow history size per render: the protobuf-encoded history (what Temporal stores and replays) of a
 * single-image render and of a batch of 4, with the biggest contributors.
 */
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { BenchContext } from './lib/context.ts';
import { encodedSize, fetchHistory, sizeByActivity } from './lib/history.ts';
import { kb, type BenchResult, BEFORE } from './lib/report.ts';
import { stackRender, txt2imgBody } from './overhead.ts';

export const BUDGET_BYTES = 64 * 1024;

export async function benchHistory(ctx: BenchContext): Promise<BenchResult> {
  const { svc } = await ctx.single();
  const { client } = await ctx.temporal();
  const lines: string[] = [];
  const sizes: Record<string, number> = {};
  for (const [label, extra] of [
    ['single image', {}],
    ['batch of 4', { batch_size: 4 }],
  ] as const) {
    const r = await stackRender(svc.url, txt2imgBody(`history ${label}`, 500_000 + Object.keys(sizes).length * 10, extra));
    const h = await fetchHistory(client, r.renderId);
    const bytes = encodedSize(h);
    const json = Buffer.byteLength(historyToJSON(h));
    sizes[label] = bytes;
    lines.push(`${label.padEnd(13)}: ${kb(bytes)} protobuf (${h.events?.length ?? 0} events; ${kb(json)} as JSON)`);
    for (const c of sizeByActivity(h).slice(0, 6)) lines.push(`    ${c.what.padEnd(28)} ${kb(c.bytes).padStart(9)}`);
  }
  const single = sizes['single image']!;
  const batch = sizes['batch of 4']!;
  const worst = Math.max(single, batch);
  return {
    name: 'history',
    before: BEFORE.history,
    title: 'Workflow history size per render (encoded protobuf, as stored by Temporal)',
    figure: `single ${kb(single)}, batch of 4 ${kb(batch)} (${kb(batch / 4)} per image)`,
    budget: `≤ ${kb(BUDGET_BYTES)} per render`,
    verdict: worst <= BUDGET_BYTES ? 'PASS' : 'OVER',
    lines,
  };
}
