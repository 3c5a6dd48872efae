// The render gallery: recent renders from GET /renders as cards (thumbnail, status, what happened — partial
// after an interrupt or skip, blank —, model, timings, failure reason, Temporal UI link, replay button for
// failed ones). Plain DOM, no framework, no build.
// Every value from the server goes through textContent or a checked attribute, never innerHTML: prompts
// are user input.
'use strict';

(function () {
  const PAGE_SIZE = 48;
  const REFRESH_MS = 3000;
  const REPLAYABLE = new Set(['failed', 'timed-out', 'terminated']);

  const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
  const uiBase = (() => {
    const u = meta('temporal-ui');
    return /^https?:\/\//.test(u) ? u.replace(/\/+$/, '') : '';
  })();
  const namespace = meta('temporal-namespace') || 'default';

  const grid = document.getElementById('grid');
  const message = document.getElementById('message');
  const more = document.getElementById('more');
  const filters = document.getElementById('filters');
  const tokenBox = document.getElementById('token');
  const tokenForm = document.getElementById('token-form');

  let token = sessionStorage.getItem('comfy-durable-token') || '';
  let nextCursor;
  let timer;
  const thumbUrls = new Map();

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    if (token) h.Authorization = `Bearer ${token}`;
    return h;
  }

  async function api(path, init) {
    const res = await fetch(path, Object.assign({}, init || {}, { headers: headers(init && init.headers) }));
    if (res.status === 401) {
      tokenBox.hidden = false;
      throw new Error('this server needs an API token');
    }
    const body = res.headers.get('content-type')?.includes('json') ? await res.json() : await res.text();
    if (!res.ok) throw new Error((body && body.detail) || `HTTP ${res.status}`);
    return body;
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function duration(ms) {
    if (typeof ms !== 'number') return '';
    if (ms < 1000) return `${ms} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s.toFixed(1)} s`;
    const m = Math.floor(s / 60);
    return `${m} min ${Math.round(s - m * 60)} s`;
  }

  function when(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? '' : d.toLocaleString();
  }

  function thumbnail(r) {
    const box = el('div', 'thumb');
    if (r.status === 'completed' && (r.outputs === undefined || r.outputs > 0)) {
      // Video renders preview as a muted, looping <video> of their MP4 (same route, streamed).
      const video = r.kind === 'video';
      const img = el(video ? 'video' : 'img');
      if (video) {
        Object.assign(img, { muted: true, loop: true, autoplay: true, playsInline: true, controls: true, preload: 'metadata' });
        img.setAttribute('aria-label', `video of ${r.id}`);
      } else {
        img.alt = `first image of ${r.id}`;
        img.loading = 'lazy';
        img.decoding = 'async';
      }
      const src = `/renders/${encodeURIComponent(r.id)}/outputs/0`;
      if (!token) img.src = src;
      else if (thumbUrls.has(r.id)) img.src = thumbUrls.get(r.id);
      else {
        // <img> cannot send a bearer token: fetch the bytes and show them from a blob: URL.
        fetch(src, { headers: headers() })
          .then((res) => (res.ok ? res.blob() : Promise.reject(new Error(String(res.status)))))
          .then((blob) => {
            const url = URL.createObjectURL(blob);
            thumbUrls.set(r.id, url);
            img.src = url;
          })
          .catch(() => box.classList.add('broken'));
      }
      img.addEventListener('error', () => box.classList.add('broken'));
      box.append(img);
    } else {
      box.append(el('span', 'placeholder', r.status === 'running' ? 'rendering…' : r.status));
    }
    return box;
  }

  function fact(dl, label, value) {
    if (value === undefined || value === null || value === '') return;
    dl.append(el('dt', '', label), el('dd', '', value));
  }

  function card(r) {
    const c = el('article', `card status-${r.status}`);
    c.dataset.renderId = r.id;
    c.dataset.status = r.status;
    c.append(thumbnail(r));

    const body = el('div', 'body');
    const head = el('div', 'head');
    head.append(el('span', `badge ${r.status}`, r.status));
    // What happened beyond the status: an interrupted or skipped render is partial, a black output blank.
    if (r.outcome === 'partial' || r.outcome === 'blank') {
      const o = el('span', `badge outcome ${r.outcome}`, r.outcome);
      o.title = r.outcomeSummary || r.outcome;
      head.append(o);
      c.dataset.outcome = r.outcome;
    }
    head.append(el('span', 'model', r.model || '?'));
    if (r.kind) head.append(el('span', 'kind', r.kind));
    body.append(head);

    if (r.prompt) body.append(el('p', 'prompt', r.prompt));
    if (r.reason) body.append(el('p', 'reason', r.reason));
    else if (r.outcomeSummary && r.outcome !== 'completed') body.append(el('p', `outcome-summary ${r.outcome}`, r.outcomeSummary));

    const dl = el('dl', 'facts');
    fact(dl, 'started', when(r.startedAt));
    fact(dl, 'took', r.status === 'running' ? '' : duration(r.durationMs));
    fact(dl, 'seed', r.seed);
    fact(dl, 'size', r.size);
    fact(dl, 'steps', r.steps);
    fact(dl, 'priority', r.priority);
    if (r.images && r.images > 1) fact(dl, 'images', r.images);
    body.append(dl);

    const id = el('p', 'id');
    const json = el('a', '', r.id);
    json.href = `/renders/${encodeURIComponent(r.id)}`;
    json.title = 'timeline (JSON)';
    id.append(json);
    body.append(id);
    if (r.replayOf) {
      const p = el('p', 'replay-of', 'replay of ');
      const a = el('a', '', r.replayOf);
      a.href = `/renders/${encodeURIComponent(r.replayOf)}`;
      p.append(a);
      body.append(p);
    }

    const actions = el('div', 'actions');
    if (uiBase) {
      const a = el('a', 'temporal', 'Temporal UI');
      a.href = `${uiBase}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(r.id)}`;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      actions.append(a);
    }
    if (REPLAYABLE.has(r.status)) {
      const b = el('button', 'replay', 'Replay');
      b.type = 'button';
      b.addEventListener('click', () => replay(r.id, b));
      actions.append(b);
    }
    if (r.status === 'running') {
      const b = el('button', 'cancel', 'Cancel');
      b.type = 'button';
      b.addEventListener('click', () => cancel(r.id, b));
      actions.append(b);
    }
    body.append(actions);
    c.append(body);
    return c;
  }

  async function replay(id, button) {
    button.disabled = true;
    button.textContent = 'Replaying…';
    try {
      const res = await api(`/renders/${encodeURIComponent(id)}/replay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      button.textContent = 'Replayed';
      button.dataset.replayId = res.renderId;
      say(`Replaying ${id} as ${res.renderId} (seed ${res.seed})`);
      setTimeout(() => load(true), 500);
    } catch (err) {
      button.disabled = false;
      button.textContent = 'Replay';
      say(`Replay failed: ${err.message}`, true);
    }
  }

  async function cancel(id, button) {
    button.disabled = true;
    try {
      await api(`/renders/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
      say(`Cancel requested for ${id}`);
      setTimeout(() => load(true), 500);
    } catch (err) {
      button.disabled = false;
      say(`Cancel failed: ${err.message}`, true);
    }
  }

  function say(text, isError) {
    message.textContent = text;
    message.classList.toggle('error', Boolean(isError));
  }

  function query(cursor) {
    const p = new URLSearchParams();
    const f = new FormData(filters);
    for (const k of ['status', 'outcome', 'model', 'since']) {
      const v = f.get(k);
      if (v) p.set(k, String(v));
    }
    p.set('limit', String(PAGE_SIZE));
    if (cursor) p.set('cursor', cursor);
    return `/renders?${p}`;
  }

  let loading = false;
  async function load(reset) {
    if (loading) return;
    loading = true;
    try {
      const page = await api(query(reset ? undefined : nextCursor));
      if (reset) grid.replaceChildren();
      for (const r of page.renders) grid.append(card(r));
      nextCursor = page.nextCursor;
      more.hidden = !nextCursor;
      if (grid.childElementCount === 0) grid.append(el('p', 'empty', 'No renders match.'));
      document.body.dataset.loaded = 'true';
      if (message.classList.contains('error')) say('');
      schedule(page.renders.some((r) => r.status === 'running'));
    } catch (err) {
      say(`Could not load renders: ${err.message}`, true);
      document.body.dataset.loaded = 'error';
    } finally {
      loading = false;
    }
  }

  function schedule(anyRunning) {
    clearTimeout(timer);
    const auto = filters.elements.namedItem('auto');
    // Only the first page refreshes itself; a long scrolled list stays where the reader is.
    if (auto && auto.checked && anyRunning && !nextCursor) timer = setTimeout(() => load(true), REFRESH_MS);
  }

  async function loadModels() {
    try {
      const models = await api('/sdapi/v1/sd-models');
      const select = filters.elements.namedItem('model');
      for (const m of models) {
        const o = el('option', '', m.model_name);
        o.value = m.model_name;
        select.append(o);
      }
    } catch {
      // The filter is a convenience: the gallery works without it.
    }
  }

  filters.addEventListener('submit', (e) => {
    e.preventDefault();
    load(true);
  });
  filters.addEventListener('change', () => load(true));
  more.addEventListener('click', () => load(false));
  tokenForm.addEventListener('submit', (e) => {
    e.preventDefault();
    token = String(new FormData(tokenForm).get('token') || '');
    sessionStorage.setItem('comfy-durable-token', token);
    tokenBox.hidden = true;
    loadModels();
    load(true);
  });

  loadModels();
  load(true);
})();
