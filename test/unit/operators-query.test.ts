import { describe, expect, it } from 'vitest';
import { buildListQuery, cursorSchema, decodeCursor, encodeCursor, parseTimeSpec, renderFiltersSchema } from '../../src/operators/query.ts';

const now = new Date('2026-05-01T22:43:00.000Z');

describe('time specs', () => {
  it.each([
    ['2h', '2026-05-01T20:43:00.000Z'],
    ['30m', '2026-05-01T22:13:00.000Z'],
    ['90s', '2026-05-01T22:41:30.000Z'],
    ['1d', '2026-04-30T22:43:00.000Z'],
    ['1w', '2026-04-24T22:43:00.000Z'],
    ['now', '2026-05-01T22:43:00.000Z'],
    ['2026-05-01T22:10:00Z', '2026-05-01T22:10:00.000Z'],
    ['2026-05-01T22:10:00+02:00', '2026-05-01T20:10:00.000Z'],
    ['2026-05-01', '2026-05-01T00:00:00.000Z'],
  ])('%s', (spec, iso) => {
    expect(parseTimeSpec(spec, now)?.toISOString()).toBe(iso);
  });

  it.each(['yesterday', '2h ago', '-2h', '', '12', 'May 1 2026', '2026-13-45T00:00:00Z'])('rejects %j', (spec) => {
    expect(parseTimeSpec(spec, now)).toBeUndefined();
  });
});

describe('list query', () => {
  it('always restricts to render workflows', () => {
    expect(buildListQuery({}, now)).toBe("WorkflowType = 'render'");
  });

  it('combines status, model, kind, replay-of and the time window', () => {
    const f = renderFiltersSchema.parse({
      status: 'failed',
      model: 'imagegen-flux-dev',
      kind: 'txt2img',
      since: '2026-05-01T22:10:00Z',
      until: '2026-05-01T22:43:00Z',
      replayOf: 'render-01abc',
    });
    expect(buildListQuery(f, now)).toBe(
      "WorkflowType = 'render' AND ExecutionStatus = 'Failed' AND RenderModel = 'imagegen-flux-dev' AND RenderKind = 'txt2img' AND RenderReplayOf = 'render-01abc' AND StartTime >= '2026-05-01T22:10:00.000Z' AND StartTime <= '2026-05-01T22:43:00.000Z'",
    );
  });

  it.each([
    ['running', 'Running'],
    ['completed', 'Completed'],
    ['failed', 'Failed'],
    ['cancelled', 'Canceled'],
    ['terminated', 'Terminated'],
    ['timed-out', 'TimedOut'],
  ])('status %s is ExecutionStatus %s', (status, temporal) => {
    expect(buildListQuery(renderFiltersSchema.parse({ status }), now)).toContain(`ExecutionStatus = '${temporal}'`);
  });

  it('relative times are resolved against now', () => {
    expect(buildListQuery({ since: '2h' }, now)).toContain("StartTime >= '2026-05-01T20:43:00.000Z'");
  });

  it.each([
    ['model', "x' OR WorkflowType = 'other"],
    ['model', 'a b'],
    ['kind', 'txt2img"'],
    ['replayOf', "render-1')"],
    ['status', 'exploded'],
    ['since', 'yesterday'],
  ])('rejects %s=%j at the boundary', (field, value) => {
    const r = renderFiltersSchema.safeParse({ [field]: value });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual([field]);
  });

  it('refuses to quote an unsafe value even when the schema was skipped', () => {
    expect(() => buildListQuery({ model: "x' OR 1=1" }, now)).toThrow(/unsafe/);
  });
});

describe('cursor', () => {
  it('round-trips a page token as an opaque URL-safe string', () => {
    const token = new Uint8Array([0, 1, 2, 250, 251, 252, 253, 254, 255, 62, 63]);
    const cursor = encodeCursor(token)!;
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursorSchema.safeParse(cursor).success).toBe(true);
    expect([...decodeCursor(cursor)!]).toEqual([...token]);
  });

  it('no token, no cursor', () => {
    expect(encodeCursor(undefined)).toBeUndefined();
    expect(encodeCursor(new Uint8Array())).toBeUndefined();
    expect(decodeCursor(undefined)).toBeUndefined();
  });

  it('rejects what it never produced', () => {
    expect(cursorSchema.safeParse('not a cursor!').success).toBe(false);
  });
});
