/**
 * What happened to a render, from its result (src/contracts/outcome.ts): the headline, the search attribute's
 * tags, each output's outcome, and the list filters that find them.
 */
import { describe, expect, it } from 'vitest';
import { table } from '../../src/cli/renders.ts';
import { buildListQuery, renderFiltersSchema } from '../../src/operators/query.ts';
import { outcomeOf, outcomeTags, outputOutcomes } from '../../src/contracts/outcome.ts';
import type { BlobRef } from '../../src/contracts/render.ts';

const png = (n: number, blank?: BlobRef['blank']): BlobRef => ({
  sha256: String(n).padStart(64, '0'),
  size: 1,
  mime: 'image/png',
  ...(blank ? { blank } : {}),
});

describe('render outcome', () => {
  it('completed, partial (interrupt / skip, with the step), blank, and both', () => {
    expect(outcomeOf({ outputs: [png(0)] })).toEqual({ outcome: 'completed', summary: 'completed: 1 output(s)' });
    expect(outcomeTags({ outputs: [png(0)] })).toEqual(['completed']);

    const interrupted = { outputs: [png(0), png(1)], interrupted: true, partial: [{ item: 1, step: 7, steps: 20 }] };
    expect(outcomeOf(interrupted)).toMatchObject({ outcome: 'partial', summary: 'partial: interrupted at step 7/20' });
    expect(outcomeTags(interrupted)).toEqual(['partial', 'interrupted']);
    // An interrupt between items (nothing partial) is still a partial render: items are missing.
    expect(outcomeOf({ outputs: [png(0)], interrupted: true }).summary).toBe('partial: interrupted');

    const skippedVideo = { outputs: [png(1)], skipped: [0] };
    expect(outcomeOf(skippedVideo)).toMatchObject({ outcome: 'partial', summary: 'partial: item 0 skipped' });
    expect(outcomeTags(skippedVideo)).toEqual(['partial', 'skipped']);

    const both = { outputs: [png(0, 'black')], interrupted: true, partial: [{ item: 0, step: 3, steps: 20 }] };
    expect(outcomeOf(both)).toMatchObject({ outcome: 'blank', summary: 'blank: interrupted at step 3/20; output 0 is black (NaN in the VAE)' });
    expect(outcomeTags(both)).toEqual(['blank', 'partial', 'interrupted']);
  });

  it('each output: its item (from the seeds), partial with the step and why, blank', () => {
    const request = { seed: 100 };
    const views = outputOutcomes({ outputs: [png(0), png(2, 'uniform')], seeds: [100, 102], skipped: [2], partial: [{ item: 2, step: 1, steps: 4 }], request });
    expect(views).toEqual([
      { index: 0, item: 0, outcome: 'completed' },
      { index: 1, item: 2, outcome: 'partial', stoppedBy: 'skip', step: 1, steps: 4, blank: 'uniform' },
    ]);
  });
});

describe('finding renders by outcome', () => {
  const query = (outcome: string) => buildListQuery(renderFiltersSchema.parse({ outcome }));
  it('maps to the RenderOutcome search attribute; failed by status; failed:<class> by the attribute', () => {
    expect(query('blank')).toBe(`WorkflowType = 'render' AND RenderOutcome = 'blank'`);
    expect(query('interrupted')).toBe(`WorkflowType = 'render' AND RenderOutcome = 'interrupted'`);
    expect(query('failed')).toBe(`WorkflowType = 'render' AND ExecutionStatus = 'Failed'`);
    expect(query('failed:ComfyExecution')).toBe(`WorkflowType = 'render' AND RenderOutcome = 'failed:ComfyExecution'`);
  });

  it('anything else is refused naming the values (no query injection)', () => {
    const bad = renderFiltersSchema.safeParse({ outcome: "blank' OR 1=1" });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toMatch(/^outcome must be one of completed, partial, interrupted, skipped, blank, failed/);
  });

  it('`renders list` shows the outcome beside the status, and what made it', () => {
    const text = table([
      {
        id: 'render-a',
        runId: 'r',
        status: 'completed',
        taskQueue: 'q',
        startedAt: '2026-01-01T00:00:00.000Z',
        outcome: 'partial',
        outcomeSummary: 'partial: interrupted at step 7/20',
        prompt: 'a cat',
      },
      {
        id: 'render-b',
        runId: 'r',
        status: 'failed',
        taskQueue: 'q',
        startedAt: '2026-01-01T00:00:00.000Z',
        outcome: 'failed',
        failureClass: 'ComfyExecution',
        reason: 'runPrompt: ComfyExecution: boom',
      },
    ]);
    const [head, a, b] = text.split('\n');
    expect(head).toMatch(/^ID\s+STATUS\s+OUTCOME\s+OWNER\s+MODEL/);
    expect(a).toMatch(/^render-a\s+completed\s+partial\s/);
    expect(a).toMatch(/\[partial: interrupted at step 7\/20\] a cat$/);
    expect(b).toMatch(/^render-b\s+failed\s+failed:ComfyExecution\s/);
    expect(b).toMatch(/runPrompt: ComfyExecution: boom$/);
  });
});
