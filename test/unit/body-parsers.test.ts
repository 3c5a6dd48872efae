/**
 * The lenient body parsers: a large body is counted and parsed in a byte worker, and the route sees what
 * Fastify's own JSON parser would have given it for the same bytes (the value, or the same 400).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerLenientBodyParsers } from '../../src/api/body-parsers.ts';
import { closeBytePool } from '../../src/bytes/pool.ts';

const OFF_LOOP_FROM = 1_000;
let lenient: FastifyInstance;
let stock: FastifyInstance;

/** Echoes the parsed body, and what its keys are (own `__proto__` or `constructor` keys included). */
function echo(f: FastifyInstance): FastifyInstance {
  f.post('/echo', async (req) => ({ body: req.body, keys: req.body && typeof req.body === 'object' ? Object.keys(req.body) : null }));
  return f;
}

beforeAll(async () => {
  lenient = Fastify();
  registerLenientBodyParsers(lenient, { offLoopFromBytes: OFF_LOOP_FROM });
  echo(lenient);
  // Fastify's own JSON parser with the options the lenient parsers use on small bodies.
  stock = Fastify({ onProtoPoisoning: 'error', onConstructorPoisoning: 'ignore' });
  echo(stock);
  await Promise.all([lenient.ready(), stock.ready()]);
});

afterAll(async () => {
  await Promise.all([lenient.close(), stock.close()]);
  await closeBytePool();
});

const pad = 'QUJD'.repeat(OFF_LOOP_FROM);
const post = (f: FastifyInstance, payload: string) => f.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload });

describe('a large JSON body parsed in a byte worker', () => {
  const bodies: Array<[string, string]> = [
    ['an img2img-like body', JSON.stringify({ prompt: 'a cat', init_images: [`data:image/png;base64,${pad}`], steps: 20, cfg_scale: 7.5, seed: -1 })],
    [
      'nesting, unicode, escapes and numbers',
      `{"a":{"b":[1,-0,2.5e3,-1.25E-2,true,false,null,{"c":"é🐈\\u00e9\\n\\"q\\""}]},"z":"${pad}","n":12345678901234567890}`,
    ],
    ['an array at the top', `[${JSON.stringify(pad)},1,{"k":[]}]`],
    ['a `constructor` key (kept, as Fastify does)', `{"constructor":{"prototype":{"x":1}},"p":"${pad}"}`],
    ['duplicate keys (the last wins)', `{"a":1,"a":2,"p":"${pad}"}`],
  ];
  for (const [what, payload] of bodies) {
    it(`${what}: the value Fastify's parser gives`, async () => {
      expect(payload.length).toBeGreaterThanOrEqual(OFF_LOOP_FROM);
      const [ours, theirs] = await Promise.all([post(lenient, payload), post(stock, payload)]);
      expect(ours.statusCode).toBe(200);
      expect(ours.json()).toEqual(theirs.json());
    });
  }

  const refused: Array<[string, string]> = [
    ['cut short', `{"prompt":"${pad}"`],
    ['a trailing comma', `{"prompt":"${pad}",}`],
    ['text after the value', `{"prompt":"${pad}"} {}`],
    ['a `__proto__` key', `{"__proto__":{"admin":true},"p":"${pad}"}`],
    ['an escaped `__proto__` key', `{"\\u005f_proto__":{"admin":true},"p":"${pad}"}`],
  ];
  for (const [what, payload] of refused) {
    it(`${what}: the 400 Fastify's parser gives`, async () => {
      const [ours, theirs] = await Promise.all([post(lenient, payload), post(stock, payload)]);
      expect(theirs.statusCode).toBe(400);
      expect(ours.statusCode).toBe(400);
      expect(ours.json()).toEqual(theirs.json());
    });
  }

  it('more values or nesting than a body may have: refused by the count (413, 400), before any parse', async () => {
    const many = await post(lenient, `[${'0,'.repeat(200_000)}0]`);
    expect(many.statusCode).toBe(413);
    expect(many.json<{ message: string }>().message).toMatch(/more than \d+ JSON values/);
    const deep = await post(lenient, `${'['.repeat(1_000)}${']'.repeat(1_000)}`);
    expect(deep.statusCode).toBe(400);
    expect(deep.json<{ message: string }>().message).toMatch(/nested deeper than/);
  });
});
