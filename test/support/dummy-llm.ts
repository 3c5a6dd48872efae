import { writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Writes a stand-in LLM server into `dir` and returns its path: `node <path> <port>` answers GET with `ok` (the
 * health check) and any other request, once its body is read, with a chat completion after `replyDelayMs`.
 * For llama-swap's exclusive group in the tests and benchmarks that share the GPU with an LLM.
 */
export function writeDummyLlm(dir: string, replyDelayMs = 0): string {
  const file = path.join(dir, 'dummy-llm.mjs');
  writeFileSync(
    file,
    `import http from 'node:http';
const answer = JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'hi' } }] });
http.createServer((req, res) => {
  if (req.method === 'GET') return res.end('ok');
  req.resume();
  req.on('end', () => setTimeout(() => res.setHeader('content-type', 'application/json').end(answer), ${replyDelayMs}));
}).listen(Number(process.argv[2]), '127.0.0.1');
`,
  );
  return file;
}
