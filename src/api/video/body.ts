/**
 * The three body encodings of the video routes, read into one field object plus file parts:
 * multipart/form-data (vLLM-Omni's own, with `input_reference` / repeated `input_references` files),
 * application/x-www-form-urlencoded, and JSON (what some clients send; a gateway converts it for vLLM-Omni).
 * Form values are strings; empty ones count as absent, repeated ones keep the last (input_references keeps
 * all, in order).
 */
import type { FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import { RequestError } from '../../errors/request-error.ts';
import type { UploadedFile } from './image-inputs.ts';

export interface VideoBody {
  fields: Record<string, unknown>;
  files: UploadedFile[];
}

const LIST_FIELDS = new Set(['input_references']);
const FILE_FIELDS = new Set(['input_reference', 'input_references']);

function formValue(key: string, v: unknown): unknown {
  if (LIST_FIELDS.has(key)) return (Array.isArray(v) ? v : [v]).filter((x) => x !== '');
  if (Array.isArray(v)) return v.at(-1);
  return v;
}

function fromForm(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v === '' || v === undefined) continue;
    out[k] = formValue(k, v);
  }
  return out;
}

export interface VideoBodyLimits {
  maxImageBytes: number;
  /** The whole body: every part (files and fields) counted together, as it streams. */
  maxBodyBytes: number;
}

export async function readVideoBody(req: FastifyRequest, limits: VideoBodyLimits): Promise<VideoBody> {
  if (!req.isMultipart()) {
    const body = req.body;
    if (body === undefined || body === null) return { fields: {}, files: [] };
    if (typeof body !== 'object' || Array.isArray(body)) {
      throw new RequestError(422, 'body', 'request body must be a JSON object or a form');
    }
    const urlencoded = /^application\/x-www-form-urlencoded/i.test(req.headers['content-type'] ?? '');
    return { fields: urlencoded ? fromForm(body as Record<string, unknown>) : (body as Record<string, unknown>), files: [] };
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.maxBodyBytes) throw tooLarge(limits.maxBodyBytes);
  try {
    return await readParts(req, limits);
  } catch (err) {
    if (err instanceof RequestError) throw err;
    const status = (err as { statusCode?: number }).statusCode;
    if (status === 413) throw new RequestError(413, 'body', `body: ${(err as Error).message}`, { limit: limits.maxBodyBytes });
    // busboy's own errors (no boundary, a broken part header, a body that ends mid-part): the client's body.
    throw new RequestError(400, 'body', `body: malformed multipart/form-data (${(err as Error).message})`);
  }
}

function tooLarge(limit: number): RequestError {
  return new RequestError(413, 'body', `body: larger than ${limit} bytes`, { limit });
}

async function readParts(req: FastifyRequest, limits: VideoBodyLimits): Promise<VideoBody> {
  const raw: Record<string, unknown[]> = {};
  const files: UploadedFile[] = [];
  let total = 0;
  const count = (n: number): void => {
    total += n;
    if (total > limits.maxBodyBytes) throw tooLarge(limits.maxBodyBytes);
  };
  for await (const part of req.parts()) {
    if (part.type === 'file') {
      if (!FILE_FIELDS.has(part.fieldname)) {
        part.file.resume();
        throw new RequestError(400, part.fieldname, `${part.fieldname}: unexpected file (files go in input_reference or input_references)`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of part.file) {
        size += (chunk as Buffer).length;
        count((chunk as Buffer).length);
        if (size > limits.maxImageBytes) {
          throw new RequestError(413, part.fieldname, `${part.fieldname}: file exceeds the limit of ${limits.maxImageBytes} bytes`, {
            limit: limits.maxImageBytes,
          });
        }
        chunks.push(chunk as Buffer);
      }
      if (part.file.truncated) {
        throw new RequestError(413, part.fieldname, `${part.fieldname}: file exceeds the limit of ${limits.maxImageBytes} bytes`, {
          limit: limits.maxImageBytes,
        });
      }
      files.push({
        field: part.fieldname as UploadedFile['field'],
        bytes: Buffer.concat(chunks),
        ...(part.mimetype ? { mimetype: part.mimetype } : {}),
        ...(part.filename ? { filename: part.filename } : {}),
      });
    } else {
      if (part.valueTruncated) throw new RequestError(413, part.fieldname, `${part.fieldname}: field value too long`);
      count(typeof part.value === 'string' ? part.value.length : 0);
      (raw[part.fieldname] ??= []).push(part.value);
    }
  }
  const fields: Record<string, unknown> = {};
  for (const [k, values] of Object.entries(raw)) {
    const kept = values.filter((v) => v !== '' && v !== undefined);
    if (kept.length === 0) continue;
    fields[k] = LIST_FIELDS.has(k) ? kept : kept.at(-1);
  }
  return { fields, files };
}
