/**
 * ComfyClient `keepSocketAhead`: the event socket of the next prompt is opened between prompts
 * (`refillSocketAhead`), so a submit takes an open socket instead of waiting for one to open. Against the in-process fake: what ComfyUI
 * sees (connections, open sockets) and what the taken socket delivers.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ComfyClient } from '../../src/comfyui/client.ts';
import type { ComfyEvent } from '../../src/comfyui/events.ts';
import type { EventSession } from '../../src/comfyui/event-stream.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { planRender } from '../../src/models/plan.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { ctx as normalizeCtx } from '../golden/helpers.ts';

let fake: FakeComfyUI;
beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0 });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(async () => {
  await fake.state.reset();
});

const websocket = () => fake.state.statsSnapshot().websocket;

/** Resolves once the fake has `n` sockets open: a socket's close reaches the server a moment after the client's. */
async function openOnFake(n: number): Promise<void> {
  const until = Date.now() + 10_000;
  while (websocket().open !== n && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  expect(websocket().open).toBe(n);
}

/** The events a session replays to a new subscriber. */
function replayed(session: EventSession): ComfyEvent[] {
  const seen: ComfyEvent[] = [];
  session.subscribe({ onEvent: (ev) => seen.push(ev) })();
  return seen;
}

/** The sessions `client` opens, in order, and the client ids of those told to forget their events. */
function watchOpens(client: ComfyClient): { opened: EventSession[]; forgotten: string[] } {
  const seen = { opened: [] as EventSession[], forgotten: [] as string[] };
  const open = client.openEventStream.bind(client);
  client.openEventStream = async (o) => {
    const s = await open(o);
    const forget = s.forgetEvents.bind(s);
    s.forgetEvents = () => (seen.forgotten.push(s.clientId), forget());
    seen.opened.push(s);
    return s;
  };
  return seen;
}

describe('socket kept ahead of the next prompt', () => {
  it('opens a socket only when refilled, and the next take is served by it', async () => {
    const client = new ComfyClient({ baseUrl: fake.url, keepSocketAhead: true });
    try {
      const first = await client.takeEventStream();
      await openOnFake(1);
      await first.close();
      await openOnFake(0);
      // Refilled between prompts: the next take has nothing to open.
      await Promise.all([client.refillSocketAhead(), client.refillSocketAhead()]);
      await openOnFake(1);
      const before = websocket().connections;
      const second = await client.takeEventStream();
      expect(second.isOpen).toBe(true);
      expect(second.clientId).not.toBe(first.clientId);
      expect(websocket().connections).toBe(before);
      await second.close();
      // Taken, nothing is kept ahead until the next refill.
      await openOnFake(0);
      await client.refillSocketAhead();
      await openOnFake(1);
    } finally {
      await client.closeSocketAhead();
    }
    await openOnFake(0);
  });

  it('forgetEvents keeps what a socket opened now would replay: the latest status only', async () => {
    const client = new ComfyClient({ baseUrl: fake.url });
    const session = await client.openEventStream();
    try {
      // Broadcasts while the socket waits for its prompt.
      const heard = new Promise<void>((resolve) => {
        let statuses = 0;
        session.subscribe({ onEvent: (ev) => (ev.type === 'status' && ++statuses === 3 ? resolve() : undefined) }, { replay: false });
      });
      for (let i = 1; i <= 3; i++) fake.state.hub.send('status', { status: { exec_info: { queue_remaining: i } } });
      await heard;
      expect(replayed(session).length).toBeGreaterThan(1);
      session.forgetEvents();
      const events = replayed(session);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'status', data: { status: { exec_info: { queue_remaining: 3 } } } });
    } finally {
      await session.close();
    }
  });

  it('a socket taken from ahead forgets what it heard while it waited; a new one has nothing to forget', async () => {
    const client = new ComfyClient({ baseUrl: fake.url, keepSocketAhead: true });
    const { forgotten } = watchOpens(client);
    try {
      const first = await client.takeEventStream();
      await client.refillSocketAhead();
      await openOnFake(2);
      const second = await client.takeEventStream();
      expect(forgotten).toEqual([second.clientId]);
      await Promise.all([first.close(), second.close()]);
    } finally {
      await client.closeSocketAhead();
    }
    await openOnFake(0);
  });

  it('a socket that closed while it waited (ComfyUI dropped it) is replaced at the take; the prompt still gets its events', async () => {
    const client = new ComfyClient({ baseUrl: fake.url, keepSocketAhead: true });
    const { opened } = watchOpens(client);
    try {
      await client.refillSocketAhead();
      fake.state.hub.dropAll();
      await opened[0]!.closed;
      const session = await client.takeEventStream();
      expect(opened).toHaveLength(2);
      expect(session.isOpen).toBe(true);
      const executed = new Promise<void>((resolve) =>
        session.subscribe({ onEvent: (ev) => (ev.type === 'executing' && ev.data.node === null ? resolve() : undefined) }),
      );
      const request = normalizeRequest('txt2img', { prompt: 'a lighthouse', width: 64, height: 64, steps: 2 }, normalizeCtx()).request;
      const graph = planRender(request, { renderId: 'socket-ahead' }).items[0]!.graph;
      await client.submitPrompt({ graph, promptId: randomUUID(), clientId: session.clientId });
      await executed;
      await session.close();
    } finally {
      await client.closeSocketAhead();
    }
    await openOnFake(0);
  });

  it('without the option every take opens its own socket, and a refill opens none', async () => {
    const client = new ComfyClient({ baseUrl: fake.url });
    const before = websocket().connections;
    await client.refillSocketAhead();
    const session = await client.takeEventStream();
    await openOnFake(1);
    await session.close();
    await openOnFake(0);
    expect(websocket().connections - before).toBe(1);
  });
});
