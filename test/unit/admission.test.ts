/**
 * Admission's per-client share (issue 27): the whole bound answers 503, a client's share 429, both with the
 * retry time; a client over its share is refused while another client is still admitted; work outside any
 * request and loopback addresses take no share of their own.
 */
import { describe, expect, it } from 'vitest';
import { Admission, AdmissionRefusedError } from '../../src/renders/admission.ts';
import { waitingRendersQuery } from '../../src/contracts/search-attributes.ts';
import { renderPriority } from '../../src/contracts/priority.ts';
import { sharedClient } from '../../src/renders/submit.ts';

function admissionWith(opts: { limit: number; perClient?: number; total?: () => number; of?: (c: string) => number }) {
  const reads: string[] = [];
  const admission = new Admission({
    limit: opts.limit,
    ...(opts.perClient !== undefined ? { perClientLimit: opts.perClient } : {}),
    retryAfterSeconds: 7,
    count: async () => {
      reads.push('total');
      return opts.total?.() ?? 0;
    },
    countClient: async (c) => {
      reads.push(c);
      return opts.of?.(c) ?? 0;
    },
    cacheMs: 60_000,
  });
  return { admission, reads };
}

async function refusal(p: Promise<unknown>): Promise<AdmissionRefusedError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AdmissionRefusedError) return err;
    throw err;
  }
  throw new Error('admitted');
}

describe('admission shares', () => {
  it('one client fills its share (429, Retry-After, its count and share named); another is still admitted', async () => {
    const { admission } = admissionWith({ limit: 10, perClient: 3 });
    for (let i = 0; i < 3; i++) await admission.admit('key:alice');
    const err = await refusal(admission.admit('key:alice'));
    expect(err).toMatchObject({ status: 429, waiting: 3, limit: 3, retryAfterSeconds: 7 });
    expect(err.message).toMatch(/MAX_WAITING_RENDERS_PER_CLIENT/);
    await expect(admission.admit('key:bob')).resolves.toBeUndefined();
  });

  it('the whole bound answers 503 even to a client within its share', async () => {
    const { admission } = admissionWith({ limit: 4, perClient: 2 });
    await admission.admit('key:a');
    await admission.admit('key:a');
    await admission.admit('key:b');
    await admission.admit('key:c');
    expect(await refusal(admission.admit('key:d'))).toMatchObject({ status: 503, waiting: 4, limit: 4 });
  });

  it("counts a client's renders from Temporal's count by client, plus the starts made since", async () => {
    const { admission, reads } = admissionWith({ limit: 100, perClient: 5, of: (c) => (c === 'addr:10.0.0.9' ? 4 : 0) });
    await admission.admit('addr:10.0.0.9');
    expect(await refusal(admission.admit('addr:10.0.0.9'))).toMatchObject({ status: 429, waiting: 5 });
    expect(reads.filter((r) => r === 'addr:10.0.0.9')).toHaveLength(1);
  });

  it('without a client (or a share as large as the bound) only the whole bound counts', async () => {
    const { admission, reads } = admissionWith({ limit: 2, perClient: 2 });
    await admission.admit('key:a');
    await admission.admit(undefined);
    expect(reads).toEqual(['total']);
    expect(await refusal(admission.admit('key:a'))).toMatchObject({ status: 503 });
  });

  it('work outside a request and loopback addresses take no share; keys and other addresses do', () => {
    expect(sharedClient('local')).toBeUndefined();
    expect(sharedClient('addr:127.0.0.1')).toBeUndefined();
    expect(sharedClient('addr:::1')).toBeUndefined();
    expect(sharedClient('addr:::ffff:127.0.0.1')).toBeUndefined();
    expect(sharedClient('addr:10.1.2.3')).toBe('addr:10.1.2.3');
    expect(sharedClient('key:alice')).toBe('key:alice');
  });

  it("a client's count query names it, quotes and backslashes stripped", () => {
    expect(waitingRendersQuery('q', "key:a'b\\")).toBe(
      "WorkflowType = 'render' AND ExecutionStatus = 'Running' AND TaskQueue = 'q' AND RenderClient = 'key:ab'",
    );
  });
});

describe('the GPU queue takes clients in turn', () => {
  it("a render's client is its fairness key, with or without a priority key", () => {
    expect(renderPriority(2, 'key:alice')).toEqual({ priority: { priorityKey: 2, fairnessKey: 'key:alice' } });
    expect(renderPriority(undefined, 'addr:10.0.0.1')).toEqual({ priority: { fairnessKey: 'addr:10.0.0.1' } });
    expect(renderPriority(undefined, undefined)).toEqual({});
  });

  it('a fairness key is at most 64 bytes (Temporal refuses longer), never a cut character', () => {
    const key = renderPriority(undefined, `key:${'é'.repeat(40)}`).priority!.fairnessKey!;
    expect(Buffer.byteLength(key)).toBeLessThanOrEqual(64);
    expect(key).toBe(`key:${'é'.repeat(30)}`);
  });
});
