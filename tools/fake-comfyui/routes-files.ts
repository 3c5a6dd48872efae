/**
 * File routes: `POST /upload/image` (multipart, ComfyUI's collision and containment rules), `GET /view`
 * (400/403/404 rules, guessed content type) and the un-aliased `/internal/files/{type}` listing.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { annotatedFilepath, dirByType, guessMime, isInside, listFilesByMtime, pyNormpath } from './files.ts';
import { pngChannel } from './png.ts';
import { internalError } from './http-util.ts';
import type { FakeState } from './state.ts';

/** Parses a multipart body with the web-standard parser built into Node (undici). */
async function parseMultipart(body: unknown, contentType: string): Promise<FormData | undefined> {
  if (!Buffer.isBuffer(body) || !contentType.toLowerCase().startsWith('multipart/form-data')) return undefined;
  try {
    return await new Request('http://fake.invalid/upload', { method: 'POST', headers: { 'content-type': contentType }, body }).formData();
  } catch {
    return undefined;
  }
}

const sha256 = (b: Buffer | Uint8Array) => createHash('sha256').update(b).digest('hex');

export function registerFileRoutes(app: FastifyInstance, state: FakeState): void {
  app.post('/upload/image', async (req, reply) => {
    // A body that is not multipart reads as an empty form: no image, hence 400.
    const form = (await parseMultipart(req.body, String(req.headers['content-type'] ?? ''))) ?? new FormData();
    const image = form.get('image');
    const overwrite = form.get('overwrite');
    const typeField = form.get('type');
    const type = typeof typeField === 'string' ? typeField : 'input';
    const uploadDir = dirByType(state.dirs, type);
    // A type other than input/temp/output leaves `type_dir` unassigned in the real handler: a 500.
    if (!uploadDir) return internalError(reply);
    if (!image || typeof image === 'string') return reply.code(400).send();
    let filename = image.name;
    if (!filename) return reply.code(400).send();

    const subfolderField = form.get('subfolder');
    const subfolder = typeof subfolderField === 'string' ? subfolderField : '';
    const fullOutputFolder = path.resolve(uploadDir, pyNormpath(subfolder));
    let filepath = path.resolve(fullOutputFolder, filename);
    if (!isInside(uploadDir, filepath)) return reply.code(400).send();
    if (!existsSync(fullOutputFolder)) mkdirSync(fullOutputFolder, { recursive: true });

    const bytes = Buffer.from(await image.arrayBuffer());
    let duplicate = false;
    if (!(overwrite === 'true' || overwrite === '1')) {
      const ext = path.extname(filename);
      const stem = filename.slice(0, filename.length - ext.length);
      const uploadHash = sha256(bytes);
      for (let i = 1; existsSync(filepath); i++) {
        // Same content under the same name is the same upload: nothing is written, the name is reused.
        if (sha256(await readFile(filepath)) === uploadHash) {
          duplicate = true;
          break;
        }
        filename = `${stem} (${i})${ext}`;
        filepath = path.join(fullOutputFolder, filename);
      }
    }
    if (!duplicate) {
      mkdirSync(path.dirname(filepath), { recursive: true });
      await writeFile(filepath, bytes);
    }
    return { name: filename, subfolder, type };
  });

  app.get('/view', async (req, reply) => {
    const q = req.query as Record<string, string | undefined>;
    if (q.filename === undefined) return reply.code(404).send();
    const annotated = annotatedFilepath(state.dirs, q.filename);
    let filename = annotated.name;
    if (!filename) return reply.code(400).send();
    if (filename.startsWith('/') || filename.includes('..')) return reply.code(400).send();
    let outputDir = annotated.dir ?? dirByType(state.dirs, q.type ?? 'output');
    if (!outputDir) return reply.code(400).send();
    if (q.subfolder !== undefined) {
      const full = path.resolve(outputDir, q.subfolder);
      if (!isInside(outputDir, full)) return reply.code(403).send();
      outputDir = full;
    }
    filename = path.basename(filename);
    const file = path.join(outputDir, filename);
    const st = await stat(file).catch(() => undefined);
    if (!st?.isFile()) return reply.code(404).send();

    let data: Buffer = await readFile(file);
    let contentType = guessMime(filename) ?? 'application/octet-stream';
    const channel = q.channel ?? 'rgba';
    if ((channel === 'rgb' || channel === 'a') && contentType === 'image/png') {
      data = pngChannel(data, channel);
    }
    if (['text/html', 'text/html-sandboxed', 'application/xhtml+xml', 'text/javascript', 'text/css'].includes(contentType)) {
      contentType = 'application/octet-stream';
    }
    return reply
      .header('Content-Disposition', `filename="${filename}"`)
      .header('Content-Type', contentType)
      .header('X-Content-Type-Options', 'nosniff')
      .send(data);
  });
}

/** `/internal/*` is a sub-app in ComfyUI and is not aliased under `/api`. */
export function registerInternalRoutes(app: FastifyInstance, state: FakeState): void {
  app.get('/internal/files/:directory_type', async (req, reply) => {
    const type = (req.params as { directory_type: string }).directory_type;
    const dir = dirByType(state.dirs, type);
    if (!dir) return reply.code(400).send('Invalid directory type');
    return listFilesByMtime(dir).map((name) => `${name} [${type}]`);
  });
}
