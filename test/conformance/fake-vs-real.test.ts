/**
 * Conformance: the fake ComfyUI against a recording of the real one. The scripted exchange that produced
 * test/fixtures/real-comfyui/capture-real.json (~145 steps: queue,
 * prompts, jobs, history, uploads, /view, every kind of validation error, execution errors, interrupts,
 * /free, cache hits, broadcasts, a reconnect) is replayed against the fake, and the answers are compared
 * structurally with the recorded ones (compare.ts, a port of compare.py). Every difference fails the test
 * unless it is on DELIBERATE_GAPS below.
 *
 * The recorded server had run the same script before (its history held earlier runs' prompts), so the fake
 * gets one warm-up replay first, and the second replay is the one compared.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startFakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { Frame } from './capture-client.ts';
import { compareCaptures } from './compare.ts';
import type { StepDiff } from './compare.ts';
import type { Capture, Holds, ReplayControls } from './replay.ts';
import { replayCapture } from './replay.ts';

const REAL: Capture = JSON.parse(readFileSync(new URL('../fixtures/real-comfyui/capture-real.json', import.meta.url), 'utf8'));

/**
 * Differences the fake keeps on purpose. Each entry: the step (exact name or pattern), a pattern of the
 * difference line, and why.
 */
const DELIBERATE_GAPS: Array<{ step: RegExp; line: RegExp; why: string }> = [
  {
    step: /^GET \/system_stats$/,
    line: /^body\.system\.argv: length/,
    why: "the real server's own command line (`--listen`, `--port`, ...); the fake has no such flags",
  },
  {
    step: /^GET \/models\/vae$/,
    line: /^body: length real=2 fake=5$/,
    why: 'the fixture adds the VAEs the recorded video runs used later that day to VAELoader (tools/fake-comfyui/fixtures/README.md)',
  },
  {
    // E is taken by the worker thread while the client is already posting F: on the real server whether
    // F's `status` (q=2) comes before E's `execution_start` is a thread race (the interrupt scenario shows
    // the other order); the fake's worker always starts first.
    step: /^queue-delete ws1 frames$/,
    line: /^(\[frames\] sequence differs \(real 16 frames, fake 16\):| {4}[-+] (real|fake): status \{status\} q=2)$/,
    why: 'thread race on the real server',
  },
];

function gapFor(d: StepDiff, line: string): string | undefined {
  return DELIBERATE_GAPS.find((g) => g.step.test(d.step) && g.line.test(line))?.why;
}

/** From the recording: for each slow scenario, the node the real server was running when the request came. */
function recordedHolds(real: Capture): Holds {
  const step = (name: string) => real.steps.find((s) => s.name === name) as unknown as { frames: Frame[]; json?: { prompt_id: string } };
  const pid = (name: string) => (real.steps.find((s) => s.name === name) as unknown as { json: { prompt_id: string } }).json.prompt_id;
  const executing = (frames: Frame[], p: string) =>
    frames
      .filter(
        (f) =>
          f.kind === 'text' &&
          f.type === 'executing' &&
          (f.data as { prompt_id?: string; node?: unknown }).prompt_id === p &&
          (f.data as { node?: unknown }).node !== null,
      )
      .map((f) => String((f.data as { node: string }).node));
  // The interrupt lands at the next node: the held node is the one executing just before the interrupted one.
  const beforeInterrupted = (framesStep: string, postStep: string) => {
    const nodes = executing(step(framesStep).frames, pid(postStep));
    return nodes[nodes.length - 2] as string;
  };
  const reconnect = executing(step('reconnect ws1 old frames').frames, pid('slowG POST /prompt'));
  return {
    A: beforeInterrupted('interrupt ws1 frames', 'slowA POST /prompt'),
    B: beforeInterrupted('interrupt ws1 frames', 'slowB POST /prompt'),
    D: beforeInterrupted('cancel-running ws1 frames', 'slowD POST /prompt'),
    E: beforeInterrupted('queue-delete ws1 frames', 'slowE POST /prompt'),
    G: reconnect[reconnect.length - 1] as string,
  };
}

/**
 * Sets that Python serialises in hash order (`executed` in `execution_interrupted`): sorted on both sides
 * before comparing, since the real order is arbitrary.
 */
function sortPythonSets(cap: Capture): Capture {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      if (v.length === 2 && v[0] === 'execution_interrupted' && v[1] && typeof v[1] === 'object') return [v[0], walk(v[1])];
      return v.map(walk);
    }
    if (v && typeof v === 'object') {
      const o = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
      if (Array.isArray(o.executed) && 'node_type' in o && !('exception_message' in o)) o.executed = [...(o.executed as string[])].sort();
      return o;
    }
    return v;
  };
  return { ...cap, steps: walk(cap.steps) as Capture['steps'] };
}

let fake: FakeComfyUI;
let capture: Capture;

beforeAll(async () => {
  // Compared with a real server's answers, which list exactly the recorded model files.
  fake = await startFakeComfyUI({ port: 0, stepMs: 0, logLevel: 'silent', profileFiles: false });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(fake.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  };
  const controls: ReplayControls = {
    hold: (entries) => post('/__fake/faults', { hold: entries }),
    release: () => post('/__fake/release', {}),
  };
  const holds = recordedHolds(REAL);
  await replayCapture(fake.url, holds, controls);
  capture = await replayCapture(fake.url, holds, controls);
  // For a cross-check with the original tool: `python3 compare.py capture-real.json $CONFORMANCE_DUMP`.
  if (process.env.CONFORMANCE_DUMP) writeFileSync(process.env.CONFORMANCE_DUMP, JSON.stringify(capture, null, 1));
}, 120_000);

afterAll(async () => {
  await fake?.close();
});

describe('fake ComfyUI vs the recorded real ComfyUI 0.33.0', () => {
  it('replays every recorded step', () => {
    expect(capture.steps.map((s) => s.name)).toEqual(REAL.steps.map((s) => s.name));
  });

  it('answers the scripted exchange like the real server, but for the deliberate gaps', () => {
    const diffs = compareCaptures(sortPythonSets(REAL), sortPythonSets(capture), [[fake.dataDir, '/opt/ComfyUI']]);
    const unexplained: string[] = [];
    for (const d of diffs) {
      const lines = d.lines.filter((l) => !gapFor(d, l));
      if (lines.length > 0) unexplained.push(`### ${d.step}\n  ${lines.join('\n  ')}`);
    }
    expect(unexplained.join('\n\n')).toBe('');
  });
});
