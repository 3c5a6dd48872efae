/**
 * A client written like ComfyUI's own scripting example (script_examples/websocket_api_example.py): open
 * `/ws?clientId=`, queue the prompt with that client id, read text messages until `executing` has node null
 * for the prompt, then `GET /history/{prompt_id}` and `GET /view` each image of each output node. Nothing in it
 * knows it talks to comfy-durable.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';

export interface ExampleRun {
  promptId: string;
  /** Every text message received, in order. */
  messages: { type: string; data: Record<string, unknown> }[];
  history: Record<string, any>;
  /** Images per output node, as `/view` returned them. */
  images: Record<string, Buffer[]>;
}

export async function runLikeComfyExample(baseUrl: string, graph: unknown, headers: Record<string, string> = {}): Promise<ExampleRun> {
  const clientId = randomUUID();
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/ws?clientId=${clientId}`, { headers });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const messages: ExampleRun['messages'] = [];
  let promptId = '';
  const finished = new Promise<void>((resolve) => {
    ws.on('message', (data, isBinary) => {
      if (isBinary) return; // previews
      const msg = JSON.parse((data as Buffer).toString('utf8')) as ExampleRun['messages'][number];
      messages.push(msg);
      if (msg.type === 'executing' && msg.data.node === null && msg.data.prompt_id === promptId) resolve();
    });
  });
  const queued = await fetch(`${baseUrl}/prompt`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ prompt: graph, client_id: clientId }),
  });
  const answer = (await queued.json()) as { prompt_id: string };
  if (queued.status !== 200) throw new Error(`queue_prompt: ${queued.status} ${JSON.stringify(answer)}`);
  promptId = answer.prompt_id;
  await finished;
  ws.close();
  const history = (await (await fetch(`${baseUrl}/history/${promptId}`, { headers })).json()) as Record<string, any>;
  const images: Record<string, Buffer[]> = {};
  for (const [node, out] of Object.entries(history[promptId].outputs as Record<string, { images?: { filename: string; subfolder: string; type: string }[] }>)) {
    for (const image of out.images ?? []) {
      const q = new URLSearchParams({ filename: image.filename, subfolder: image.subfolder, type: image.type });
      const res = await fetch(`${baseUrl}/view?${q.toString()}`, { headers });
      (images[node] ??= []).push(Buffer.from(await res.arrayBuffer()));
    }
  }
  return { promptId, messages, history, images };
}
