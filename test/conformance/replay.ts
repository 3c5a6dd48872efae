/**
 * The scripted exchange that produced test/fixtures/real-comfyui/capture-real.json, replayed step for step with the same names, requests and
 * order against any base URL, producing a capture of the same shape.
 *
 * Two things differ from the script, both because a test must not depend on timing:
 * - the script's sleeps become socket barriers (capture-client.ts);
 * - where the script sleeps 0.3 s "while a slow node runs" and then interrupts, the replay has the fake hold
 *   the node the real server was running at that moment (`holds`, read from the recording) and waits for
 *   that node's `executing`. The real server's slow nodes are 3072 px lanczos upscales; the fake's are
 *   instant unless held.
 */
import { randomUUID } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import type { Frame, Step } from './capture-client.ts';
import { CaptureHttp, CaptureWs, donePred, executingPred, isText } from './capture-client.ts';

export interface Capture {
  base: string;
  run: string;
  steps: Step[];
}

/** Where the replay must hold a node: the scenario's prompt (by its step name) and the node to hold. */
export type Holds = Record<'A' | 'B' | 'D' | 'E' | 'G', string>;

export interface ReplayControls {
  /** Hold node `nodeId` of prompt `promptId` until an interrupt or `release()`. */
  hold(entries: Array<{ promptId: string; nodeId: string }>): Promise<void>;
  release(): Promise<void>;
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(b: Buffer): number {
  let c = 0xffffffff;
  for (const x of b) c = (crcTable[(c ^ x) & 255] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** `png_bytes(w, h, seed)` of the script: the same bytes. */
export function pngBytes(w: number, h: number, seed: number): Buffer {
  const rows: number[] = [];
  for (let y = 0; y < h; y++) {
    rows.push(0);
    for (let x = 0; x < w * 3; x++) rows.push((x * 7 + y * 13 + seed) & 255);
  }
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from('89504e470d0a1a0a', 'hex'),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.from(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

type Graph = Record<string, unknown>;

function graphModelFree(image: string, w: number, h: number, prefix: string): Graph {
  return {
    load: { class_type: 'LoadImage', inputs: { image }, _meta: { title: 'Load Image' } },
    scale: {
      class_type: 'ImageScale',
      inputs: { image: ['load', 0], upscale_method: 'nearest-exact', width: w, height: h, crop: 'disabled' },
      _meta: { title: 'Upscale Image' },
    },
    save: { class_type: 'SaveImage', inputs: { images: ['scale', 0], filename_prefix: prefix }, _meta: { title: 'Save Image' } },
  };
}

/** `graph_slow` with `--slow real`: 12 chained upscales alternating 3072 and 64 px. */
function graphSlow(image: string, prefix: string): Graph {
  const g: Graph = { load: { class_type: 'LoadImage', inputs: { image }, _meta: { title: 'Load Image' } } };
  let prev = 'load';
  for (let i = 0; i < 12; i++) {
    const size = i % 2 === 0 ? 3072 : 64;
    g[`s${i}`] = {
      class_type: 'ImageScale',
      inputs: { image: [prev, 0], upscale_method: 'lanczos', width: size, height: size, crop: 'disabled' },
      _meta: { title: `s${i}` },
    };
    prev = `s${i}`;
  }
  g.save = { class_type: 'SaveImage', inputs: { images: [prev, 0], filename_prefix: prefix }, _meta: { title: 'Save Image' } };
  return g;
}

export async function replayCapture(base: string, holds: Holds, controls: ReplayControls): Promise<Capture> {
  const RUN = randomUUID().replaceAll('-', '').slice(0, 8);
  const http = new CaptureHttp(base);
  const steps = http.steps;
  const req = http.req.bind(http);
  const sockets: CaptureWs[] = [];
  const barrier = () => Promise.all(sockets.map((s) => s.barrier()));

  for (const [name, path] of [
    ['GET /queue idle', '/queue'],
    ['GET /prompt idle', '/prompt'],
    ['GET /system_stats', '/system_stats'],
    ['GET /features', '/features'],
    ['GET /object_info/ImageScale', '/object_info/ImageScale'],
    ['GET /object_info/NoSuchNode', '/object_info/NoSuchNode'],
    ['GET /models', '/models'],
    ['GET /models/vae', '/models/vae'],
    ['GET /models/nosuchfolder', '/models/nosuchfolder'],
    ['GET /api/jobs?limit=2', '/api/jobs?limit=2'],
    ['GET /jobs (no /api)', '/jobs'],
    ['GET /api/jobs?status=bogus', '/api/jobs?status=bogus'],
    ['GET /api/jobs?limit=0', '/api/jobs?limit=0'],
    ['GET /api/jobs/{unknown uuid}', `/api/jobs/${randomUUID()}`],
    ['GET /history/{unknown uuid}', `/history/${randomUUID()}`],
    ['GET /api/prompt (alias)', '/api/prompt'],
  ] as const) {
    await req(name, 'GET', path);
  }

  const c1 = `cap-c1-${RUN}`;
  const c2 = `cap-c2-${RUN}`;
  let ws1 = new CaptureWs(base, c1, true);
  const ws2 = new CaptureWs(base, c2, false);
  await ws1.open();
  await ws2.open();
  sockets.push(ws1, ws2);
  await ws1.waitFor((f) => isText(f, 'feature_flags'));
  await barrier();
  steps.push({ name: 'WS open frames', ws1: ws1.since(0), ws2: ws2.since(0) });

  const fn = `cap-${RUN}.png`;
  await http.upload('upload first', fn, pngBytes(32, 24, 1), { overwrite: 'false', subfolder: 'cap', type: 'input' });
  await http.upload('upload identical', fn, pngBytes(32, 24, 1), { overwrite: 'false', subfolder: 'cap', type: 'input' });
  await http.upload('upload different bytes', fn, pngBytes(32, 24, 2), { overwrite: 'false', subfolder: 'cap', type: 'input' });
  await http.upload('upload different bytes again', fn, pngBytes(32, 24, 3), { overwrite: 'false', subfolder: 'cap', type: 'input' });
  await http.upload('upload overwrite=true', fn, pngBytes(32, 24, 4), { overwrite: 'true', subfolder: 'cap', type: 'input' });
  await http.upload('upload overwrite=1 no subfolder field', `cap2-${RUN}.png`, pngBytes(8, 8, 5), { overwrite: '1' });
  await http.upload('upload no fields at all', `cap3-${RUN}.png`, pngBytes(8, 8, 6));
  await http.upload('upload type=temp', `cap4-${RUN}.png`, pngBytes(8, 8, 7), { type: 'temp' });
  await http.upload('upload type=output', `cap5-${RUN}.png`, pngBytes(8, 8, 8), { type: 'output', subfolder: 'cap' });
  await http.upload('upload type=bogus', `cap6-${RUN}.png`, pngBytes(8, 8, 9), { type: 'bogus' });
  await http.upload('upload subfolder traversal', `cap7-${RUN}.png`, pngBytes(8, 8, 10), { subfolder: '../evil' });
  await http.upload('upload no image part', null, null, { subfolder: 'cap' });
  await http.upload('upload filename with dir', `dir/cap8-${RUN}.png`, pngBytes(8, 8, 11));
  const img = `cap/${fn}`;

  /** `run_prompt()`: submit, follow to the end (socket, or history without client id), settle. */
  const runPrompt = async (name: string, graph: Graph, clientId: string | null, ws: CaptureWs) => {
    const pid = randomUUID();
    const body: Record<string, unknown> = { prompt: graph, prompt_id: pid };
    if (clientId) body.client_id = clientId;
    const m = ws.mark();
    const r = await req(`${name}: POST /prompt`, 'POST', '/prompt', { json: body });
    if (clientId) await ws.waitFor(donePred(pid), m);
    else await http.waitForHistory(pid);
    await http.drain();
    await barrier();
    return { pid, m, r };
  };

  const p1 = await runPrompt('prompt1', graphModelFree(img, 48, 40, `cap/${RUN}`), c1, ws1);
  steps.push({ name: 'prompt1 ws1 frames', frames: ws1.since(p1.m) });
  steps.push({ name: 'prompt1 ws2 frames (other client)', frames: ws2.since(0) });
  const h1 = await req('prompt1 GET /history/{id}', 'GET', `/history/${p1.pid}`);
  await req('prompt1 GET /api/jobs/{id}', 'GET', `/api/jobs/${p1.pid}`);
  await req('GET /api/jobs?limit=5 after prompt1', 'GET', '/api/jobs?limit=5');
  await req('GET /history?max_items=1', 'GET', '/history?max_items=1');
  await req('GET /queue idle after', 'GET', '/queue');
  const out = (h1.json as Record<string, { outputs: { save: { images: Array<{ filename: string; subfolder: string; type: string }> } } }>)[p1.pid]?.outputs.save
    .images[0];
  if (out) {
    const q = (o: Record<string, string>) => new URLSearchParams(o).toString();
    await req('GET /view output', 'GET', `/view?${q({ filename: out.filename, subfolder: out.subfolder, type: out.type })}`, { keepBytes: true });
    await req('GET /view output without type', 'GET', `/view?${q({ filename: out.filename, subfolder: out.subfolder })}`, { keepBytes: true });
    await req('GET /view annotated filename', 'GET', `/view?${q({ filename: `${out.filename} [output]`, subfolder: out.subfolder })}`, { keepBytes: true });
  } else {
    steps.push({ name: 'view output skipped', error: 'no output in history' });
  }
  await req('GET /view input upload', 'GET', `/view?filename=${fn}&subfolder=cap&type=input`, { keepBytes: true });
  await req('GET /view missing', 'GET', '/view?filename=nope.png&type=output');
  await req('GET /view no filename', 'GET', '/view');
  await req('GET /view dotdot', 'GET', '/view?filename=../x.png&type=output');
  await req('GET /view subfolder traversal', 'GET', '/view?filename=x.png&subfolder=../..&type=output');

  const p2 = await runPrompt('prompt2 identical', graphModelFree(img, 48, 40, `cap/${RUN}`), c1, ws1);
  steps.push({ name: 'prompt2 ws1 frames', frames: ws1.since(p2.m) });
  await req('prompt2 GET /history/{id}', 'GET', `/history/${p2.pid}`);

  const m3b = ws2.mark();
  const p3 = await runPrompt('prompt3 no client_id', graphModelFree(img, 48, 40, `cap/${RUN}-nc`), null, ws1);
  steps.push({ name: 'prompt3 ws1 frames', frames: ws1.since(p3.m) });
  steps.push({ name: 'prompt3 ws2 frames', frames: ws2.since(m3b) });
  await req('prompt3 GET /history/{id}', 'GET', `/history/${p3.pid}`);

  await http.upload('upload truncated png', `bad-${RUN}.png`, pngBytes(32, 24, 1).subarray(0, 60), { subfolder: 'cap' });
  const p4 = await runPrompt('prompt4 exec error', graphModelFree(`cap/bad-${RUN}.png`, 48, 40, `cap/${RUN}-bad`), c1, ws1);
  steps.push({ name: 'prompt4 ws1 frames', frames: ws1.since(p4.m) });
  await req('prompt4 GET /history/{id}', 'GET', `/history/${p4.pid}`);
  await req('prompt4 GET /api/jobs/{id}', 'GET', `/api/jobs/${p4.pid}`);
  await http.upload('upload garbage bytes as png', `garbage-${RUN}.png`, Buffer.from('this is not an image at all'), { subfolder: 'cap' });
  const p4b = await runPrompt('prompt4b exec error (garbage image)', graphModelFree(`cap/garbage-${RUN}.png`, 48, 40, `cap/${RUN}-garbage`), c1, ws1);
  steps.push({ name: 'prompt4b ws1 frames', frames: ws1.since(p4b.m) });
  await req('prompt4b GET /history/{id}', 'GET', `/history/${p4b.pid}`);
  await req('prompt4b GET /api/jobs/{id}', 'GET', `/api/jobs/${p4b.pid}`);

  await badGraphs(http, img, RUN, c1);
  await http.drain();
  await barrier();
  await req('GET /queue after bad graphs', 'GET', '/queue');

  await req('interrupt idle no body', 'POST', '/interrupt');
  await req('interrupt idle {}', 'POST', '/interrupt', { json: {} });
  await req('interrupt idle invalid json', 'POST', '/interrupt', { raw: '{nope' });
  await req('interrupt idle prompt_id not running', 'POST', '/interrupt', { json: { prompt_id: randomUUID() } });
  await req('jobs cancel unknown', 'POST', `/api/jobs/${randomUUID()}/cancel`, { json: {} });
  await req('jobs cancel batch not a list', 'POST', '/api/jobs/cancel', { json: { job_ids: 'x' } });
  await req('jobs cancel batch bad ids', 'POST', '/api/jobs/cancel', { json: { job_ids: ['bad', randomUUID()] } });
  await req('jobs cancel batch empty', 'POST', '/api/jobs/cancel', { json: { job_ids: [] } });

  // ---- running + pending + interrupt
  await http.drain();
  await barrier();
  const [pidA, pidB, pidC] = [randomUUID(), randomUUID(), randomUUID()];
  await controls.hold([
    { promptId: pidA, nodeId: holds.A },
    { promptId: pidB, nodeId: holds.B },
  ]);
  const mI = ws1.mark();
  const mI2 = ws2.mark();
  await req('slowA POST /prompt', 'POST', '/prompt', { json: { prompt: graphSlow(img, `cap/${RUN}-slow1`), prompt_id: pidA, client_id: c1 } });
  await req('slowB POST /prompt', 'POST', '/prompt', { json: { prompt: graphSlow(img, `cap/${RUN}-slow2`), prompt_id: pidB, client_id: c1 } });
  await req('slowC POST /prompt (front)', 'POST', '/prompt', {
    json: { prompt: graphSlow(img, `cap/${RUN}-slow3`), prompt_id: pidC, client_id: c1, front: true },
  });
  await ws1.waitFor(executingPred(pidA, holds.A), mI);
  await req('GET /queue running+pending', 'GET', '/queue');
  await req('GET /prompt running', 'GET', '/prompt');
  await req('GET /api/jobs/{running}', 'GET', `/api/jobs/${pidA}`);
  await req('GET /api/jobs/{pending}', 'GET', `/api/jobs/${pidB}`);
  await req('GET /history/{running}', 'GET', `/history/${pidA}`);
  await req('GET /api/jobs?status=pending,in_progress', 'GET', '/api/jobs?status=pending,in_progress');
  await req('interrupt targeted at pending', 'POST', '/interrupt', { json: { prompt_id: pidB } });
  await req('jobs cancel pending C', 'POST', `/api/jobs/${pidC}/cancel`, { json: {} });
  await req('GET /queue after cancel C', 'GET', '/queue');
  await req('interrupt global {}', 'POST', '/interrupt', { json: {} });
  await ws1.waitFor(donePred(pidA), mI);
  await ws1.waitFor(executingPred(pidB, holds.B), mI);
  await req('interrupt targeted at running B', 'POST', '/interrupt', { json: { prompt_id: pidB } });
  await ws1.waitFor(donePred(pidB), mI);
  await barrier();
  steps.push({ name: 'interrupt ws1 frames', frames: ws1.since(mI) });
  steps.push({ name: 'interrupt ws2 frames', frames: ws2.since(mI2) });
  await req('interrupted A GET /history', 'GET', `/history/${pidA}`);
  await req('interrupted A GET /api/jobs', 'GET', `/api/jobs/${pidA}`);
  await req('interrupted B GET /history', 'GET', `/history/${pidB}`);
  await req('cancelled-pending C GET /history', 'GET', `/history/${pidC}`);
  await req('cancelled-pending C GET /api/jobs', 'GET', `/api/jobs/${pidC}`);

  // ---- jobs cancel of the running prompt
  await http.drain();
  await barrier();
  const pidD = randomUUID();
  await controls.hold([{ promptId: pidD, nodeId: holds.D }]);
  const mD = ws1.mark();
  await req('slowD POST /prompt', 'POST', '/prompt', { json: { prompt: graphSlow(img, `cap/${RUN}-slow4`), prompt_id: pidD, client_id: c1 } });
  await ws1.waitFor(executingPred(pidD, holds.D), mD);
  await req('jobs cancel running D', 'POST', `/api/jobs/${pidD}/cancel`, { json: {} });
  await ws1.waitFor(donePred(pidD), mD);
  await barrier();
  steps.push({ name: 'cancel-running ws1 frames', frames: ws1.since(mD) });
  await req('cancelled-running D GET /api/jobs', 'GET', `/api/jobs/${pidD}`);
  await req('jobs cancel finished D again', 'POST', `/api/jobs/${pidD}/cancel`, { json: {} });

  // ---- queue manipulation
  await http.drain();
  await barrier();
  const [pidE, pidF] = [randomUUID(), randomUUID()];
  await controls.hold([{ promptId: pidE, nodeId: holds.E }]);
  const mE = ws1.mark();
  await req('slowE POST /prompt', 'POST', '/prompt', { json: { prompt: graphSlow(img, `cap/${RUN}-slow5`), prompt_id: pidE, client_id: c1 } });
  await req('slowF POST /prompt', 'POST', '/prompt', { json: { prompt: graphSlow(img, `cap/${RUN}-slow6`), prompt_id: pidF, client_id: c1 } });
  await ws1.waitFor(executingPred(pidE, holds.E), mE);
  await req('POST /queue delete pending F', 'POST', '/queue', { json: { delete: [pidF] } });
  await req('POST /queue delete running E (no effect)', 'POST', '/queue', { json: { delete: [pidE] } });
  await req('GET /queue after deletes', 'GET', '/queue');
  await req('POST /queue clear', 'POST', '/queue', { json: { clear: true } });
  await req('POST /interrupt to end E', 'POST', '/interrupt', { json: { prompt_id: pidE } });
  await ws1.waitFor(donePred(pidE), mE);
  await barrier();
  steps.push({ name: 'queue-delete ws1 frames', frames: ws1.since(mE) });
  await req('deleted-pending F GET /api/jobs', 'GET', `/api/jobs/${pidF}`);

  // ---- free
  await http.drain();
  await req('POST /free both', 'POST', '/free', { json: { unload_models: true, free_memory: true } });
  await req('POST /free empty', 'POST', '/free', { json: {} });
  await req('POST /free no body', 'POST', '/free');
  await http.drain();
  const p5 = await runPrompt('prompt5 after free (identical to prompt1)', graphModelFree(img, 48, 40, `cap/${RUN}`), c1, ws1);
  steps.push({ name: 'prompt5 ws1 frames', frames: ws1.since(p5.m) });
  await req('prompt5 GET /history/{id}', 'GET', `/history/${p5.pid}`);

  await req('POST /history delete prompt1', 'POST', '/history', { json: { delete: [p1.pid] } });
  await req('GET /history/{deleted}', 'GET', `/history/${p1.pid}`);
  await req('GET /api/jobs/{deleted history}', 'GET', `/api/jobs/${p1.pid}`);

  // ---- reconnect with the same clientId while a prompt runs
  await http.drain();
  await barrier();
  const pidG = randomUUID();
  await controls.hold([{ promptId: pidG, nodeId: holds.G }]);
  const mG = ws1.mark();
  await req('slowG POST /prompt', 'POST', '/prompt', { json: { prompt: graphSlow(img, `cap/${RUN}-slow7`), prompt_id: pidG, client_id: c1 } });
  await ws1.waitFor(executingPred(pidG, holds.G), mG);
  await ws1.close();
  sockets.splice(sockets.indexOf(ws1), 1);
  const oldWs1 = ws1;
  ws1 = new CaptureWs(base, c1, false);
  await ws1.open();
  sockets.push(ws1);
  await ws1.waitFor((f: Frame) => isText(f, 'executing') && f.data.node === holds.G && !('prompt_id' in f.data));
  await controls.release();
  await ws1.waitFor(donePred(pidG));
  await barrier();
  steps.push({ name: 'reconnect ws1 old frames', frames: oldWs1.since(mG) });
  steps.push({ name: 'reconnect ws1b frames', frames: ws1.since(0), saw_done: true });
  await ws1.close();
  await ws2.close();
  await req('GET /queue final', 'GET', '/queue');
  return { base, run: RUN, steps };
}

/** The script's validation cases, posted in its order. */
async function badGraphs(http: CaptureHttp, img: string, RUN: string, c1: string): Promise<void> {
  type G = Record<string, { class_type?: string; inputs: Record<string, unknown>; _meta?: unknown }>;
  const g = () => graphModelFree(img, 48, 40, `cap/${RUN}-v`) as G;
  const cases: Array<[string, Record<string, unknown>]> = [];
  const edit = (name: string, f: (x: G) => void, extra: Record<string, unknown> = {}) => {
    const x = g();
    f(x);
    cases.push([name, { prompt: x, ...extra }]);
  };
  edit('unknown class_type', (x) => void (x.scale!.class_type = 'NoSuchNode'));
  edit('missing class_type', (x) => void delete x.scale!.class_type);
  edit('missing required input', (x) => void delete x.scale!.inputs.upscale_method);
  edit('link to missing node', (x) => void (x.scale!.inputs.image = ['nosuchnode', 0]));
  edit('link output index out of range', (x) => void (x.scale!.inputs.image = ['load', 5]));
  edit('link type mismatch (MASK into IMAGE)', (x) => void (x.scale!.inputs.image = ['load', 1]));
  edit('malformed link (1 element)', (x) => void (x.scale!.inputs.image = ['load']));
  edit('value not in list', (x) => void (x.scale!.inputs.upscale_method = 'bogus'));
  edit('value below min', (x) => void (x.scale!.inputs.width = -5));
  edit('value above max', (x) => void (x.scale!.inputs.width = 10 ** 9));
  edit('invalid int', (x) => void (x.scale!.inputs.width = 'abc'));
  edit('float for int', (x) => void (x.scale!.inputs.width = 48.7));
  edit('LoadImage missing file', (x) => void (x.load!.inputs.image = 'nope/does-not-exist.png'));
  edit('no output node', (x) => void delete x.save);
  cases.push(['empty prompt', { prompt: {} }]);
  cases.push(['no prompt key', { client_id: 'x' }]);
  edit('prompt_id not a uuid', () => {}, { prompt_id: 'abc' });
  edit('prompt_id uppercase uuid', () => {}, { prompt_id: randomUUID().toUpperCase() });
  edit('dependency cycle plus valid output', (x) => {
    x.scale2 = { class_type: 'ImageScale', inputs: { image: ['scale2b', 0], upscale_method: 'nearest-exact', width: 8, height: 8, crop: 'disabled' } };
    x.scale2b = { class_type: 'ImageScale', inputs: { image: ['scale2', 0], upscale_method: 'nearest-exact', width: 8, height: 8, crop: 'disabled' } };
    x.save2 = { class_type: 'SaveImage', inputs: { images: ['scale2', 0], filename_prefix: 'cyc' } };
  });
  edit(
    'partial: one valid output, one invalid',
    (x) => {
      x.save2 = { class_type: 'SaveImage', inputs: { images: ['scale', 0], filename_prefix: `cap/${RUN}-p` } };
      x.bad = { class_type: 'ImageScale', inputs: { image: ['load', 0], upscale_method: 'bogus', width: 8, height: 8, crop: 'disabled' } };
      x.save3 = { class_type: 'SaveImage', inputs: { images: ['bad', 0], filename_prefix: 'bad' } };
    },
    { client_id: c1 },
  );
  edit('extra unknown input (accepted?)', (x) => void (x.scale!.inputs.extra_unknown_input = 1), { client_id: c1 });
  edit('__value__ wrapped scalar list', (x) => void (x.scale!.inputs.width = { __value__: [48] }));
  edit('numeric string for int', (x) => void (x.scale!.inputs.width = '48'), { client_id: c1 });
  for (const [name, body] of cases) await http.req(`bad graph: ${name}`, 'POST', '/prompt', { json: body });
  await http.req('bad graph: malformed JSON body', 'POST', '/prompt', { raw: '{"prompt": ' });
  await http.req('bad graph: JSON array body', 'POST', '/prompt', { raw: '[]' });
}
