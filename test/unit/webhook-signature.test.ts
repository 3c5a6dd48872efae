/**
 * Standard Webhooks signatures: what src/webhooks/signature.ts signs must verify with the reference library
 * (`standardwebhooks`, the one the spec's authors publish), and a changed id, timestamp, body or secret must not.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { parseSecret, sign, signedHeaders } from '../../src/webhooks/signature.ts';

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const key = parseSecret(secret);
const body = JSON.stringify({ object: 'event', id: 'evt_1', type: 'video.completed', data: { id: 'render-x' } });
const nowS = () => Math.floor(Date.now() / 1000);

/** The PyPI `standardwebhooks` library (`.ci/run` installs it), or STANDARDWEBHOOKS_PYTHON naming a Python that has it. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const python = process.env.STANDARDWEBHOOKS_PYTHON ?? path.join(root, '.venv-standardwebhooks', 'bin', 'python');
const pythonLibrary = existsSync(python);
if (!pythonLibrary) console.warn(`Python standardwebhooks check skipped: no Python at ${python} (run .ci/run, or set STANDARDWEBHOOKS_PYTHON)`);
const VERIFY_PY = [
  'import json, sys',
  'from standardwebhooks import Webhook',
  'm = json.load(sys.stdin)',
  'print(json.dumps(Webhook(m["secret"]).verify(m["body"], m["headers"])))',
].join('\n');

describe('webhook signatures (Standard Webhooks)', () => {
  it('verify with the standardwebhooks library, which parses the body back', () => {
    const headers = signedHeaders([key], 'msg_abc', nowS(), body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  it('match the library’s own signature for the same id, time and body', () => {
    const t = nowS();
    expect(sign(key, 'msg_abc', t, body)).toBe(new Webhook(secret).sign('msg_abc', new Date(t * 1000), body));
  });

  it('fail to verify when the body, the id, the timestamp or the secret differ', () => {
    const headers = signedHeaders([key], 'msg_abc', nowS(), body);
    const wh = new Webhook(secret);
    expect(() => wh.verify(`${body} `, { ...headers })).toThrow(/signature/i);
    expect(() => wh.verify(body, { ...headers, 'webhook-id': 'msg_abd' })).toThrow(/signature/i);
    expect(() => wh.verify(body, { ...headers, 'webhook-timestamp': String(nowS() - 1) })).toThrow(/signature/i);
    expect(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body, { ...headers })).toThrow(/signature/i);
  });

  it('an old timestamp is refused by receivers (replay protection): each try signs with its own time', () => {
    const headers = signedHeaders([key], 'msg_abc', nowS() - 3600, body);
    expect(() => new Webhook(secret).verify(body, { ...headers })).toThrow(/too old/i);
  });

  it('during a rotation every secret signs: a receiver with either verifies', () => {
    const next = `whsec_${randomBytes(24).toString('base64')}`;
    const headers = signedHeaders([key, parseSecret(next)], 'msg_rot', nowS(), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(secret).verify(body, { ...headers })).toBeTruthy();
    expect(new Webhook(next).verify(body, { ...headers })).toBeTruthy();
  });

  it.skipIf(!pythonLibrary)('verify with the PyPI standardwebhooks library too (rotation included), and a tampered body does not', () => {
    const next = `whsec_${randomBytes(24).toString('base64')}`;
    const headers = signedHeaders([key, parseSecret(next)], 'msg_py', nowS(), body);
    const verify = (s: string, b: string): string =>
      execFileSync(python, ['-c', VERIFY_PY], { input: JSON.stringify({ secret: s, body: b, headers }) }).toString();
    expect(JSON.parse(verify(secret, body))).toEqual(JSON.parse(body));
    expect(JSON.parse(verify(next, body))).toEqual(JSON.parse(body));
    expect(() => verify(secret, body.replace('render-x', 'render-y'))).toThrow(/WebhookVerificationError/);
  });

  it('secrets: whsec_ prefix, standard base64, 24 to 64 bytes', () => {
    expect(() => parseSecret(randomBytes(32).toString('base64'))).toThrow(/whsec_/);
    expect(() => parseSecret('whsec_not base64!')).toThrow(/base64/);
    expect(() => parseSecret(`whsec_${randomBytes(16).toString('base64')}`)).toThrow(/24 to 64 bytes, this one 16/);
    expect(() => parseSecret(`whsec_${randomBytes(65).toString('base64')}`)).toThrow(/this one 65/);
    expect(parseSecret(`whsec_${Buffer.alloc(24, 7).toString('base64')}`)).toEqual(Buffer.alloc(24, 7));
  });
});
