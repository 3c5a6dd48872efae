import { describe, expect, it } from 'vitest';
import { eventPromptId, executedFiles, isTerminalExecutionError, parseBinaryFrame, parseEvent } from '../../src/comfyui/events.ts';

const ev = (type: string, data: unknown): string => JSON.stringify({ type, data });

describe('parseEvent', () => {
  it('parses the documented events', () => {
    const s = parseEvent(ev('status', { status: { exec_info: { queue_remaining: 2 } }, sid: 'abc' }));
    expect(s).toEqual({ type: 'status', data: { status: { exec_info: { queue_remaining: 2 } }, sid: 'abc' } });

    const start = parseEvent(ev('execution_start', { prompt_id: 'p', timestamp: 1 }));
    expect(start.type).toBe('execution_start');
    expect(eventPromptId(start)).toBe('p');

    const cached = parseEvent(ev('execution_cached', { nodes: ['1', 2], prompt_id: 'p', timestamp: 1 }));
    expect(cached).toMatchObject({ type: 'execution_cached', data: { nodes: ['1', '2'] } });

    const prog = parseEvent(ev('progress', { value: 3, max: 20, prompt_id: 'p', node: '3' }));
    expect(prog).toMatchObject({ type: 'progress', data: { value: 3, max: 20, node: '3' } });

    const ps = parseEvent(
      ev('progress_state', {
        prompt_id: 'p',
        nodes: { '3': { value: 1, max: 2, state: 'running', node_id: '3', prompt_id: 'p', display_node_id: '3', parent_node_id: null, real_node_id: '3' } },
      }),
    );
    expect(ps.type).toBe('progress_state');

    const exed = parseEvent(
      ev('executed', {
        node: '9',
        display_node: '9',
        output: { images: [{ filename: 'a.png', subfolder: '', type: 'output' }], animated: [true] },
        prompt_id: 'p',
      }),
    );
    expect(exed.type).toBe('executed');
    if (exed.type === 'executed') expect(executedFiles(exed)).toEqual([{ filename: 'a.png', subfolder: '', type: 'output' }]);

    expect(parseEvent(ev('execution_success', { prompt_id: 'p', timestamp: 5 })).type).toBe('execution_success');
    expect(parseEvent(ev('execution_interrupted', { prompt_id: 'p', node_id: '3', node_type: 'KSampler', executed: [], timestamp: 1 })).type).toBe(
      'execution_interrupted',
    );
    expect(parseEvent(ev('feature_flags', { supports_preview_metadata: true, max_upload_size: 1 })).type).toBe('feature_flags');
  });

  it('executing: node may be null; prompt_id may be absent (reconnect replay)', () => {
    const done = parseEvent(ev('executing', { node: null, prompt_id: 'p' }));
    expect(done).toEqual({ type: 'executing', data: { node: null, prompt_id: 'p' } });
    const replay = parseEvent(ev('executing', { node: '7' }));
    expect(replay.type).toBe('executing');
    expect(eventPromptId(replay)).toBeUndefined();
  });

  it('execution_error keeps node, type and message; ExecutionBlocked is not terminal', () => {
    const e = parseEvent(
      ev('execution_error', {
        prompt_id: 'p',
        node_id: '3',
        node_type: 'KSampler',
        executed: [],
        exception_message: 'boom',
        exception_type: 'RuntimeError',
        traceback: ['t'],
        current_inputs: {},
        current_outputs: [],
        timestamp: 1,
      }),
    );
    expect(e.type).toBe('execution_error');
    if (e.type === 'execution_error') {
      expect(e.data.node_type).toBe('KSampler');
      expect(isTerminalExecutionError(e)).toBe(true);
    }
    const blocked = parseEvent(
      ev('execution_error', {
        prompt_id: 'p',
        node_id: '3',
        node_type: 'X',
        executed: [],
        exception_message: 'Execution Blocked',
        exception_type: 'ExecutionBlocked',
        traceback: [],
      }),
    );
    if (blocked.type !== 'execution_error') throw new Error('expected execution_error');
    expect(isTerminalExecutionError(blocked)).toBe(false);
  });

  it('tolerates unknown events, invalid payloads and garbage', () => {
    expect(parseEvent(ev('assets.seed.done', { x: 1 }))).toEqual({ type: 'unknown', eventType: 'assets.seed.done', data: { x: 1 }, invalid: false });
    expect(parseEvent(ev('progress', { value: 'x' }))).toMatchObject({ type: 'unknown', eventType: 'progress', invalid: true });
    expect(parseEvent('not json')).toMatchObject({ type: 'unknown', invalid: true });
    expect(parseEvent('[1,2]')).toMatchObject({ type: 'unknown', invalid: true });
    expect(parseEvent(ev('__proto__', {}))).toMatchObject({ type: 'unknown' });
  });
});

describe('parseBinaryFrame', () => {
  const u32 = (...n: number[]): Buffer =>
    Buffer.concat(
      n.map((x) => {
        const b = Buffer.alloc(4);
        b.writeUInt32BE(x);
        return b;
      }),
    );

  it('classifies previews and text frames', () => {
    expect(parseBinaryFrame(Buffer.concat([u32(1, 1), Buffer.from([0xff, 0xd8])]))).toEqual({
      kind: 'preview_image',
      format: 'jpeg',
      imageBytes: 2,
      image: Buffer.from([0xff, 0xd8]),
    });
    const meta = Buffer.from(JSON.stringify({ node_id: '3', prompt_id: 'p', image_type: 'image/png' }));
    expect(parseBinaryFrame(Buffer.concat([u32(4, meta.length), meta, Buffer.from([1, 2, 3])]))).toEqual({
      kind: 'preview_image_with_metadata',
      metadata: { node_id: '3', prompt_id: 'p', image_type: 'image/png' },
      imageBytes: 3,
      image: Buffer.from([1, 2, 3]),
    });
    expect(parseBinaryFrame(Buffer.concat([u32(3, 2), Buffer.from('12hello')]))).toEqual({ kind: 'text', nodeId: '12', text: 'hello' });
  });

  it('never throws on short or unknown frames', () => {
    expect(parseBinaryFrame(Buffer.from([1]))).toEqual({ kind: 'unknown', eventType: undefined, length: 1 });
    expect(parseBinaryFrame(u32(9, 0))).toMatchObject({ kind: 'unknown', eventType: 9 });
    expect(parseBinaryFrame(u32(4, 100))).toMatchObject({ kind: 'unknown', eventType: 4 });
  });
});
