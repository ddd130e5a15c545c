// Hermes Hub web panel. Plain JavaScript, no build step, no external
// resources. Untrusted text is only ever set with textContent.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);

  // el builds an element: el('div', {class: 'x', dataset: {a: 1}}, child, 'text').
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (v === true) e.setAttribute(k, '');
      else e.setAttribute(k, String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  class HTTPError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  // api calls the hub's JSON API with the login cookie.
  async function api(method, path, body, contentType) {
    const opts = { method, credentials: 'same-origin', headers: {} };
    if (body !== undefined) {
      if (body instanceof FormData) {
        opts.body = body; // multipart: the browser sets its boundary
      } else if (typeof body === 'string') {
        opts.body = body;
        opts.headers['Content-Type'] = contentType || 'text/plain';
      } else {
        opts.body = JSON.stringify(body);
        opts.headers['Content-Type'] = 'application/json';
      }
    }
    const res = await fetch(path, opts);
    let data = null;
    const text = await res.text();
    if (text) {
      try { data = JSON.parse(text); } catch (e) { data = { error: text }; }
    }
    if (res.status === 401 && path !== '/api/login' && !$('app').hidden) {
      showLogin('Your session has ended: log in again.');
    }
    if (!res.ok) throw new HTTPError(res.status, (data && data.error) || res.statusText);
    return data;
  }

  function randomID() {
    const b = new Uint8Array(12);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  // ---- Login -------------------------------------------------------------

  let started = false;

  function showLogin(message) {
    closeStream();
    $('app').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('token').focus();
  }

  async function login(token) {
    await api('POST', '/api/login', { token });
    $('token').value = '';
    $('login').hidden = true;
    startApp();
  }

  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('login-error').textContent = '';
    try {
      await login($('token').value.trim());
    } catch (e) {
      $('login-error').textContent = e.status === 401 ? 'That token is not right.' : String(e.message);
    }
  });

  $('logout').addEventListener('click', async () => {
    try { await api('POST', '/api/logout'); } catch (e) { /* the cookie is gone either way */ }
    showLogin('Logged out.');
  });

  async function boot() {
    // A login link carries the token in the fragment, which is never sent to
    // a server; take it, then remove it from the address bar and history.
    const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (m) {
      history.replaceState(null, '', location.pathname + location.search);
      try {
        await login(decodeURIComponent(m[1].replace(/\+/g, ' ')));
        return;
      } catch (e) {
        showLogin(e.status === 401 ? 'The token in that link is not right (the hub may have restarted with a new one).' : String(e.message));
        return;
      }
    }
    try {
      await api('GET', '/api/status');
      startApp();
    } catch (e) {
      showLogin(e.status === 401 ? '' : String(e.message));
    }
  }

  function startApp() {
    $('app').hidden = false;
    $('login').hidden = true;
    openStream();
    loadPermissions();
    loadVerbs();
    loadWorkspace();
    refreshStatus();
    if (!started) {
      started = true;
      setInterval(() => { if (!document.hidden && !$('app').hidden) refreshStatus(); }, 10000);
    }
    $('input').focus();
  }

  // ---- Permissions -------------------------------------------------------
  //
  // The admin views and controls show only when the panel's identity holds
  // the admin permission they need (GET /api/whoami); the hub refuses the
  // rest anyway. Elements name theirs in data-perm.

  let perms = new Set();

  function can(perm) { return perms.has(perm); }

  function applyPermissions() {
    for (const node of document.querySelectorAll('[data-perm]')) node.hidden = !can(node.dataset.perm);
    const current = document.querySelector('.tab[aria-current="page"]');
    if (current && current.hidden) showView('chat');
  }

  async function loadPermissions() {
    try {
      const who = await api('GET', '/api/whoami');
      perms = new Set(who.permissions || []);
    } catch (e) {
      perms = new Set();
    }
    applyPermissions();
  }

  // ---- Views -------------------------------------------------------------

  const loaders = { channels: loadChannels, targets: loadTargets, outbox: loadOutbox, access: loadAccess, nodes: loadNodes, schedules: loadSchedules, history: loadHistory };

  function showView(name) {
    for (const b of document.querySelectorAll('.tab')) {
      if (b.dataset.view === name) b.setAttribute('aria-current', 'page');
      else b.removeAttribute('aria-current');
    }
    for (const v of document.querySelectorAll('.view')) v.hidden = v.id !== 'view-' + name;
    if (loaders[name]) loaders[name]();
    refreshStatus();
    if (name === 'chat') scrollToEnd(true);
  }
  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => showView(b.dataset.view));

  // ---- Rendering chat text -----------------------------------------------

  // renderText turns chat Markdown (code fences, inline code, line breaks)
  // into DOM nodes without ever parsing HTML.
  function renderText(text) {
    const frag = document.createDocumentFragment();
    const lines = text.split('\n');
    let para = [];
    const flush = () => {
      if (para.length === 0) return;
      const p = el('p');
      appendInline(p, para.join('\n'));
      frag.append(p);
      para = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const open = /^(`{3,})([^`]*)$/.exec(lines[i].trim());
      if (!open) { para.push(lines[i]); continue; }
      flush();
      const ticks = open[1].length;
      const lang = open[2].trim();
      const body = [];
      i++;
      for (; i < lines.length; i++) {
        const close = /^(`{3,})\s*$/.exec(lines[i].trim());
        if (close && close[1].length >= ticks) break;
        body.push(lines[i]);
      }
      const code = el('code', { text: body.join('\n') });
      if (lang) code.dataset.lang = lang;
      frag.append(body.length > FOLD_LINES ? fold(body, code) : el('pre', {}, code));
    }
    flush();
    return frag;
  }

  // A code block longer than FOLD_LINES shows its first PREVIEW_LINES and
  // a control that shows the whole of it, all of which is in the page.
  const FOLD_LINES = 40;
  const PREVIEW_LINES = 20;

  function fold(lines, code) {
    const n = lines.length.toLocaleString();
    const preview = el('pre', { class: 'fold-preview' }, el('code', { text: lines.slice(0, PREVIEW_LINES).join('\n') }));
    const summary = el('summary', { text: `Show all ${n} lines` });
    const details = el('details', { class: 'fold' }, summary, el('pre', {}, code));
    details.addEventListener('toggle', () => {
      preview.hidden = details.open;
      summary.textContent = details.open ? `Show the first ${PREVIEW_LINES} lines only` : `Show all ${n} lines`;
    });
    return el('div', { class: 'folded', dataset: { lines: String(lines.length) } }, preview, details);
  }

  function appendInline(parent, s) {
    const re = /(`+)([\s\S]*?[^`])\1(?!`)/g;
    let last = 0;
    let m;
    while ((m = re.exec(s)) !== null) {
      if (m.index > last) parent.append(document.createTextNode(s.slice(last, m.index)));
      parent.append(el('code', { text: m[2] }));
      last = re.lastIndex;
    }
    if (last < s.length) parent.append(document.createTextNode(s.slice(last)));
  }

  // ---- Conversation ------------------------------------------------------

  const seen = new Set();
  const labels = { inbound: 'You', reply: 'Hub', notice: 'Notice', api: 'API result' };

  function timeOf(ts) {
    const d = new Date(ts);
    return isNaN(d) ? '' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  }

  function nearBottom() {
    const m = $('messages');
    return m.scrollHeight - m.scrollTop - m.clientHeight < 120;
  }

  function scrollToEnd(force) {
    const m = $('messages');
    if (force || nearBottom()) m.scrollTop = m.scrollHeight;
  }

  function addMessage(kind, text, opts) {
    opts = opts || {};
    const stick = nearBottom();
    $('empty').hidden = true;
    const msg = el('div', { class: 'msg ' + kind + (opts.failed ? ' failed' : ''), dataset: { turn: opts.turn || '' } });
    if (kind === 'reply' || kind === 'api') msg.append(el('div', { class: 'label', text: labels[kind] }));
    msg.append(renderText(text));
    const meta = [timeOf(opts.ts || new Date().toISOString())];
    if (opts.meta) meta.push(opts.meta);
    if (kind !== 'notice' && kind !== 'reset') msg.append(el('div', { class: 'meta', text: meta.filter(Boolean).join(' · ') }));
    if (text.startsWith('⚠')) msg.classList.add('failed');
    $('messages').append(msg);
    if (stick || opts.scroll) scrollToEnd(true);
    return msg;
  }

  function onEvent(ev) {
    if (ev.type === 'reset') {
      // The hub does not know our last id: the whole history follows.
      seen.clear();
      calls.clear();
      for (const m of document.querySelectorAll('#messages .msg')) m.remove();
      $('empty').hidden = false;
      return;
    }
    if (ev.type === 'running') {
      syncRunning(ev.running || []);
      return;
    }
    if (ev.id) {
      if (seen.has(ev.id)) return;
      seen.add(ev.id);
    }
    if (ev.type === 'progress') {
      showProgress(ev);
      return;
    }
    const msg = addMessage(ev.type === 'inbound' ? 'inbound' : ev.type === 'reply' ? 'reply' : 'notice', ev.text || '', { ts: ev.ts, turn: ev.turn_id });
    if (ev.file) {
      // A file the hub sent: a download served for this conversation.
      const link = el('a', { class: 'file', href: ev.file.url, download: ev.file.name, text: '⬇ ' + ev.file.name + ' (' + ev.file.size.toLocaleString('en') + ' bytes)' });
      msg.insertBefore(link, msg.querySelector('.meta'));
    }
    if (ev.confirm) heldCall(msg, ev);
  }

  // ---- Calls held for confirmation ------------------------------------------
  // A reply that is a held call's prompt gets a Review button, and opens
  // the confirm dialog when it is new: the exact call, Run and Cancel (or,
  // for an approver, Approve and Reject). The hub decides every press and
  // answers it (someone else's call, pressed twice, expired).

  const confirmLabels = { run: ['Run', 'Cancel'], approve: ['Approve', 'Reject'] };

  // The turns this page sent: a prompt that answers one of them opens the
  // dialog; a replayed one (a reload, another device) shows its Review
  // button only.
  const sentTurns = new Set();

  function heldCall(msg, ev) {
    msg.classList.add('held');
    msg.append(el('div', { class: 'held-actions' },
      el('button', { type: 'button', class: 'secondary small', text: 'Review', onclick: () => confirmDialog(ev) })));
    if (sentTurns.has(ev.turn_id)) {
      sentTurns.delete(ev.turn_id);
      confirmDialog(ev);
    }
  }

  function confirmDialog(ev) {
    const old = document.getElementById('confirm-dialog');
    if (old) old.remove();
    const [yes, no] = confirmLabels[ev.confirm_stage] || confirmLabels.run;
    const note = el('p', { class: 'confirm-note muted', role: 'status' });
    const press = async (action, button) => {
      for (const b of d.querySelectorAll('button')) b.disabled = true;
      try {
        const r = await api('POST', '/api/confirm', { id: ev.confirm, action });
        note.textContent = r.text || '';
      } catch (e) {
        note.textContent = '⚠ ' + e.message;
      }
      d.querySelector('.confirm-close').disabled = false;
    };
    const d = el('dialog', { id: 'confirm-dialog', class: 'confirm-dialog', 'aria-labelledby': 'confirm-title' },
      el('h2', { id: 'confirm-title', text: ev.confirm_stage === 'approve' ? 'Approve this call?' : 'Run this call?' }),
      renderText(ev.text || ''),
      note,
      el('div', { class: 'confirm-actions' },
        el('button', { type: 'button', class: 'primary confirm-yes', text: yes, onclick: (e) => press(yes.toLowerCase(), e.target) }),
        el('button', { type: 'button', class: 'secondary confirm-no', text: no, onclick: (e) => press(no.toLowerCase(), e.target) }),
        el('button', { type: 'button', class: 'secondary confirm-close', text: 'Close', onclick: () => d.close() })));
    document.body.append(d);
    d.showModal();
  }

  // ---- Progress of running calls --------------------------------------------
  //
  // A call that runs a few seconds gets one element, updated in place by the
  // hub's progress events (running updates carry no id), with a Cancel
  // control; the final event (done, failed, cancelled, interrupted) ends it
  // and its reply follows as usual. A "running" event lists the calls still
  // running when the stream (re)connects: any other shown as running ended
  // while this page was not listening.

  const calls = new Map(); // turn id → { el, state, elapsedMS, at }

  function fmtElapsed(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + String(s % 60).padStart(2, '0') + 's';
    return Math.floor(m / 60) + 'h ' + String(m % 60).padStart(2, '0') + 'm';
  }

  const stateLabels = { running: 'running', done: 'finished', failed: 'failed', cancelled: 'cancelled', interrupted: 'interrupted', ended: 'ended' };

  function progressElement(turn) {
    let c = calls.get(turn);
    if (c) return c;
    const stick = nearBottom();
    $('empty').hidden = true;
    const el0 = el('div', { class: 'msg progress', dataset: { progress: turn, state: 'running' }, role: 'status' },
      el('div', { class: 'progress-head' },
        el('span', { class: 'spinner', 'aria-hidden': 'true' }),
        el('span', { class: 'progress-verb' }),
        el('span', { class: 'badge progress-state' }),
        el('span', { class: 'progress-elapsed muted' })),
      el('div', { class: 'progress-text' }),
      el('pre', { class: 'progress-tail', hidden: true }, el('code')),
      el('div', { class: 'progress-actions' },
        el('button', { type: 'button', class: 'secondary small progress-cancel', text: 'Cancel', 'aria-label': 'Cancel this call', onclick: () => cancelCall(turn) }),
        el('span', { class: 'progress-note muted', role: 'status' })));
    $('messages').append(el0);
    if (stick) scrollToEnd(true);
    c = { el: el0, state: 'running', elapsedMS: 0, at: Date.now(), verb: '' };
    calls.set(turn, c);
    return c;
  }

  function showProgress(ev) {
    const p = ev.progress || {};
    const c = progressElement(ev.turn_id || '');
    // A final state is never overwritten by a late running update.
    if (c.state !== 'running' && p.state === 'running') return;
    const stick = nearBottom();
    c.state = p.state || 'running';
    c.verb = p.verb || c.verb;
    c.elapsedMS = p.elapsed_ms || 0;
    c.at = Date.now();
    const e = c.el;
    e.dataset.state = c.state;
    e.querySelector('.progress-verb').textContent = c.verb;
    e.querySelector('.progress-state').textContent = stateLabels[c.state] || c.state;
    e.querySelector('.progress-state').dataset.state = c.state;
    const tail = e.querySelector('.progress-tail');
    if (p.tail) {
      tail.firstChild.textContent = p.tail;
      tail.hidden = false;
    }
    const text = e.querySelector('.progress-text');
    if (c.state === 'running') {
      text.textContent = '';
    } else {
      // The hub's own words for how it ended; the reply follows.
      text.replaceChildren(renderText((ev.text || '').split('\n')[0]));
      endCall(c);
    }
    tickCall(c);
    if (stick) scrollToEnd(true);
  }

  function endCall(c) {
    const b = c.el.querySelector('.progress-cancel');
    if (b) b.remove();
    c.el.classList.add('ended');
    c.el.querySelector('.spinner').hidden = true;
  }

  function tickCall(c) {
    const ms = c.state === 'running' ? c.elapsedMS + (Date.now() - c.at) : c.elapsedMS;
    c.el.querySelector('.progress-elapsed').textContent = fmtElapsed(ms);
  }

  function syncRunning(turns) {
    const live = new Set(turns);
    for (const [turn, c] of calls) {
      if (c.state === 'running' && !live.has(turn)) {
        c.state = 'ended';
        c.el.dataset.state = 'ended';
        c.el.querySelector('.progress-state').textContent = stateLabels.ended;
        c.el.querySelector('.progress-state').dataset.state = 'ended';
        c.el.querySelector('.progress-text').textContent = 'This call is no longer running; its result is in the conversation.';
        endCall(c);
      }
    }
  }

  setInterval(() => {
    for (const c of calls.values()) if (c.state === 'running') tickCall(c);
  }, 1000);

  async function cancelCall(turn) {
    const c = calls.get(turn);
    if (!c || c.state !== 'running') return;
    const b = c.el.querySelector('.progress-cancel');
    const note = c.el.querySelector('.progress-note');
    if (b) { b.disabled = true; b.textContent = 'Cancelling…'; }
    try {
      const r = await api('POST', '/api/cancel', { turn });
      note.textContent = r.text || 'Cancelling.';
    } catch (e) {
      note.textContent = '⚠ ' + e.message;
      if (b && c.state === 'running') { b.disabled = false; b.textContent = 'Cancel'; }
    }
  }

  let stream = null;
  let retryTimer = null;

  function setConn(state, text) {
    $('conn').dataset.state = state;
    $('conn').textContent = text || state;
  }

  function openStream() {
    closeStream();
    setConn('connecting', 'connecting');
    const es = new EventSource('/api/events');
    stream = es;
    es.onopen = () => { setConn('live', 'live'); refreshStatus(); };
    es.onmessage = (m) => {
      try { onEvent(JSON.parse(m.data)); } catch (e) { /* ignore a malformed event */ }
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) {
        // The browser gave up (e.g. 401): find out why, then try again.
        setConn('offline', 'offline');
        stream = null;
        api('GET', '/api/status').then(() => {
          retryTimer = setTimeout(openStream, 2000);
        }).catch(() => {});
      } else {
        setConn('connecting', 'reconnecting');
      }
    };
  }

  function closeStream() {
    if (retryTimer) { clearTimeout(retryTimer); retryTimer = null; }
    if (stream) { stream.close(); stream = null; }
  }

  // send posts chat text; a network failure is retried with the same
  // client_turn_id, so the hub runs the turn at most once.
  async function send(text, file) {
    const id = randomID();
    sentTurns.add('web.' + id);
    let lastErr;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        let body = { text, client_turn_id: id };
        if (file) {
          // The fields first, the file last: the hub saves it as it arrives.
          body = new FormData();
          body.append('text', text);
          body.append('client_turn_id', id);
          body.append('file', file, file.name);
        }
        const res = await api('POST', '/api/messages', body);
        if (res.status === 'duplicate') addMessage('notice', 'Already sent (turn ' + res.turn_id + ').');
        if (/^\/(hub[._])?use(\s|@|$)/i.test(text)) loadWorkspace();
        return res;
      } catch (e) {
        lastErr = e;
        if (e instanceof HTTPError) break;
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
      }
    }
    addMessage('notice', '⚠ Not sent: ' + (lastErr ? lastErr.message : 'unknown error'), { scroll: true });
    throw lastErr;
  }

  // ---- Composer and completion ---------------------------------------------

  let verbs = [];
  let builtins = [];
  let completion = { items: [], index: 0 };

  async function loadVerbs() {
    try {
      const res = await api('GET', '/api/verbs');
      verbs = res.verbs || [];
      builtins = res.builtins || [];
      fillVerbSelect();
    } catch (e) {
      if (e.status !== 401) addMessage('notice', '⚠ Could not load the verbs: ' + e.message);
    }
  }

  const norm = (s) => s.toLowerCase().replace(/_/g, '.');

  function findVerb(name) {
    const n = norm(name);
    return verbs.find((v) => norm(v.name) === n);
  }

  function candidates(prefix) {
    const p = norm(prefix);
    const all = verbs.map((v) => ({ name: v.name, summary: v.summary }))
      .concat(builtins.map((b) => ({ name: b, summary: 'built-in' })));
    const starts = all.filter((c) => norm(c.name).startsWith(p));
    const contains = all.filter((c) => !norm(c.name).startsWith(p) && norm(c.name).includes(p));
    return starts.concat(contains);
  }

  function updateCompletion() {
    const input = $('input');
    const v = input.value;
    const m = /^\/(\S*)$/.exec(v);
    const list = $('completions');
    updateUsage();
    if (!m) { hideCompletion(); return; }
    completion.items = candidates(m[1]);
    completion.index = 0;
    if (completion.items.length === 0) { hideCompletion(); return; }
    list.replaceChildren(...completion.items.map((c, i) => el('li', {
      role: 'option', id: 'completion-' + i, 'aria-selected': i === 0 ? 'true' : 'false',
      onmousedown: (e) => { e.preventDefault(); pick(i); },
    }, el('span', { class: 'name', text: '/' + c.name }), el('span', { class: 'summary', text: c.summary }))));
    list.hidden = false;
    input.setAttribute('aria-activedescendant', 'completion-0');
  }

  function hideCompletion() {
    $('completions').hidden = true;
    completion.items = [];
    $('input').removeAttribute('aria-activedescendant');
  }

  function moveCompletion(d) {
    const n = completion.items.length;
    if (n === 0) return;
    completion.index = (completion.index + d + n) % n;
    const lis = $('completions').children;
    for (let i = 0; i < lis.length; i++) lis[i].setAttribute('aria-selected', i === completion.index ? 'true' : 'false');
    lis[completion.index].scrollIntoView({ block: 'nearest' });
    $('input').setAttribute('aria-activedescendant', 'completion-' + completion.index);
  }

  function pick(i) {
    const c = completion.items[i];
    if (!c) return;
    $('input').value = '/' + c.name + ' ';
    hideCompletion();
    updateUsage();
    autosize();
    $('input').focus();
  }

  function currentVerb() {
    const m = /^\/([^\s@]+)/.exec($('input').value);
    return m ? findVerb(m[1]) : null;
  }

  function updateUsage() {
    const v = currentVerb();
    $('usage').textContent = v ? v.usage : '';
    $('usage').title = v ? v.usage + '\n' + v.summary : '';
  }

  function autosize() {
    const t = $('input');
    t.style.height = 'auto';
    t.style.height = Math.min(t.scrollHeight + 2, window.innerHeight * 0.4) + 'px';
  }

  $('input').addEventListener('input', () => { updateCompletion(); updateUsage(); autosize(); });
  $('input').addEventListener('blur', () => setTimeout(hideCompletion, 150));
  $('input').addEventListener('keydown', (e) => {
    const open = !$('completions').hidden;
    if (open && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
      e.preventDefault();
      moveCompletion(e.key === 'ArrowDown' ? 1 : -1);
    } else if (open && (e.key === 'Tab' || e.key === 'Enter')) {
      e.preventDefault();
      pick(completion.index);
    } else if (open && e.key === 'Escape') {
      hideCompletion();
    } else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer-form').requestSubmit();
    }
  });

  // ---- A file sent with the message: picked, or dropped on the composer ----

  let pendingFile = null;
  function attach(file) {
    pendingFile = file || null;
    $('attached').hidden = !pendingFile;
    $('attached-name').textContent = pendingFile ? '📎 ' + pendingFile.name + ' (' + pendingFile.size.toLocaleString('en') + ' bytes): its path is the text, or none for the uploads directory' : '';
  }
  $('attach').addEventListener('click', () => $('file-input').click());
  $('file-input').addEventListener('change', () => attach($('file-input').files[0]));
  $('attached-clear').addEventListener('click', () => { attach(null); $('file-input').value = ''; });
  const composer = document.querySelector('.composer');
  composer.addEventListener('dragover', (e) => { e.preventDefault(); composer.classList.add('dropping'); });
  composer.addEventListener('dragleave', () => composer.classList.remove('dropping'));
  composer.addEventListener('drop', (e) => {
    e.preventDefault();
    composer.classList.remove('dropping');
    if (e.dataTransfer && e.dataTransfer.files.length) attach(e.dataTransfer.files[0]);
  });

  $('composer-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = $('input').value.trim();
    const file = pendingFile;
    if (!text && !file) return;
    attach(null);
    $('file-input').value = '';
    // The box is free again at once: a long call answers later (its
    // progress shows in the conversation), and the next command may be typed
    // meanwhile. A message that was not sent comes back to the box.
    $('input').value = '';
    autosize();
    updateUsage();
    scrollToEnd(true);
    try {
      await send(text, file);
    } catch (err) {
      if (file && !pendingFile) attach(file);
      if ($('input').value === '') {
        $('input').value = text;
        autosize();
        updateUsage();
      }
    } finally {
      $('input').focus();
    }
  });

  // ---- Verb form -----------------------------------------------------------

  function fillVerbSelect() {
    const sel = $('form-verb');
    const cur = sel.value;
    sel.replaceChildren(...verbs.map((v) => el('option', { value: v.name, text: v.name })));
    if (cur && findVerb(cur)) sel.value = cur;
  }

  $('form-toggle').addEventListener('click', () => {
    const panel = $('form-panel');
    if (!panel.hidden) { panel.hidden = true; return; }
    const v = currentVerb() || findVerb($('form-verb').value) || verbs[0];
    if (!v) return;
    $('form-verb').value = v.name;
    buildForm(v);
    panel.hidden = false;
    const first = panel.querySelector('#form-fields input, #form-fields textarea, #form-fields select');
    if (first) first.focus();
  });
  $('form-close').addEventListener('click', () => { $('form-panel').hidden = true; });
  $('form-verb').addEventListener('change', () => buildForm(findVerb($('form-verb').value)));

  function fieldInput(f, id) {
    const common = { id, name: f.name, required: f.required, 'aria-describedby': id + '-hint' };
    switch (f.kind) {
      case 'bool': {
        const c = el('input', Object.assign({ type: 'checkbox' }, common, { required: false }));
        c.checked = f.default === 'true';
        return c;
      }
      case 'int':
      case 'number':
        return el('input', Object.assign({ type: 'number', inputmode: 'numeric', step: f.kind === 'int' ? '1' : 'any', placeholder: f.default ? 'default: ' + f.default : '' }, common));
      case 'enum':
        return el('select', common, f.required ? null : el('option', { value: '', text: f.default ? '(default: ' + f.default + ')' : '(none)' }),
          ...(f.enum || []).map((x) => el('option', { value: x, text: x })));
      case 'list':
        if (structuredList(f)) return el('textarea', Object.assign({ rows: 4, placeholder: 'JSON list, like [{"key": "value"}]' }, common));
        return el('textarea', Object.assign({ rows: 3, placeholder: 'one per line' }, common));
      case 'map':
      case 'object':
      case 'any':
        return el('textarea', Object.assign({ rows: 3, placeholder: 'JSON' }, common));
      default:
        if (f.name === 'content' || /text$/i.test(f.name)) return el('textarea', Object.assign({ rows: 5, placeholder: f.default ? 'default: ' + f.default : '' }, common));
        return el('input', Object.assign({ type: 'text', autocapitalize: 'off', spellcheck: 'false', placeholder: f.default ? 'default: ' + f.default : '' }, common));
    }
  }

  // structuredList: a list of objects (fs.edit's edits), typed as JSON.
  function structuredList(f) {
    return f.kind === 'list' && (f.elem === 'object' || f.elem === 'map' || f.elem === 'any');
  }

  function buildForm(v) {
    if (!v) return;
    $('form-summary').textContent = v.summary + (v.readOnly ? ' (read-only)' : '');
    $('form-error').textContent = '';
    const fields = (v.arguments && v.arguments.fields) || [];
    const nodes = fields.map((f) => {
      const id = 'f-' + f.name;
      const input = fieldInput(f, id);
      const label = el('label', { for: id }, f.name, f.required ? el('span', { class: 'req', title: 'required', text: '*' }) : null);
      const hintText = [f.description, f.type, f.default && f.kind !== 'bool' ? 'default: ' + f.default : ''].filter(Boolean).join(' · ');
      const hint = el('span', { class: 'hint', id: id + '-hint', text: hintText });
      if (f.kind === 'bool') return el('div', { class: 'field check', dataset: { name: f.name } }, input, label, hint);
      return el('div', { class: 'field', dataset: { name: f.name } }, label, input, hint);
    });
    if (nodes.length === 0) nodes.push(el('p', { class: 'muted', text: 'This verb takes no arguments.' }));
    $('form-fields').replaceChildren(...nodes);
  }

  // formArguments reads the form into a typed arguments object.
  function formArguments(v) {
    const args = {};
    for (const f of (v.arguments && v.arguments.fields) || []) {
      const input = $('f-' + f.name);
      if (!input) continue;
      if (f.kind === 'bool') {
        const want = input.checked;
        if (f.required || String(want) !== (f.default || 'false')) args[f.name] = want;
        continue;
      }
      const raw = input.value;
      if (raw.trim() === '') {
        if (f.required && f.kind !== 'list' && f.kind !== 'string') throw new Error(f.name + ' is required.');
        if (f.required && f.kind === 'list') args[f.name] = [];
        else if (f.required) args[f.name] = raw;
        continue;
      }
      switch (f.kind) {
        case 'int': {
          const n = Number(raw);
          if (!Number.isInteger(n)) throw new Error(f.name + ' must be a whole number.');
          args[f.name] = n;
          break;
        }
        case 'number': {
          const n = Number(raw);
          if (!Number.isFinite(n)) throw new Error(f.name + ' must be a number.');
          args[f.name] = n;
          break;
        }
        case 'list': {
          if (structuredList(f)) {
            let list;
            try { list = JSON.parse(raw); } catch (e) { throw new Error(f.name + ' must be a JSON list: ' + e.message); }
            args[f.name] = Array.isArray(list) ? list : [list];
            break;
          }
          const items = raw.split('\n').map((s) => s.trim()).filter((s) => s !== '');
          args[f.name] = f.elem === 'int' || f.elem === 'number' ? items.map(Number) : items;
          break;
        }
        case 'map':
        case 'object':
        case 'any':
          try { args[f.name] = JSON.parse(raw); } catch (e) { throw new Error(f.name + ' must be JSON: ' + e.message); }
          break;
        default:
          args[f.name] = raw;
      }
    }
    return args;
  }

  $('verb-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const mode = (e.submitter && e.submitter.dataset.mode) || 'chat';
    const v = findVerb($('form-verb').value);
    if (!v) return;
    $('form-error').textContent = '';
    let args;
    try {
      args = formArguments(v);
    } catch (err) {
      $('form-error').textContent = err.message;
      return;
    }
    const buttons = $('verb-form').querySelectorAll('button');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      if (mode === 'api') {
        const envelope = { verb: v.name, arguments: args };
        addMessage('inbound', 'POST /api/execute\n```json\n' + JSON.stringify(envelope, null, 2) + '\n```', { scroll: true });
        const res = await api('POST', '/api/execute', envelope);
        const ok = res && res.succeeded;
        const head = ok ? '✓ ' + v.name + ' succeeded' : '⚠ ' + (res.errorMessage || 'failed') + ' (' + (res.errorCode || 'error') + ')';
        addMessage('api', head + '\n```json\n' + JSON.stringify(res, null, 2) + '\n```', { scroll: true, failed: !ok });
      } else {
        // The chat grammar takes a JSON (or YAML) object on the lines after
        // the command.
        await send('/' + v.name + '\n' + JSON.stringify(args, null, 2));
      }
      $('form-panel').hidden = true;
    } catch (err) {
      $('form-error').textContent = err.message;
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  });

  // ---- Channels ------------------------------------------------------------

  let channelTimer = null;
  async function loadChannels() {
    const q = $('channel-query').value.trim();
    try {
      const list = await api('GET', '/api/channels' + (q ? '?query=' + encodeURIComponent(q) : ''));
      $('channels-note').textContent = list.length === 0 ? (q ? 'No channel matches.' : 'No chat has talked to the hub yet.') : list.length + ' channel' + (list.length === 1 ? '' : 's');
      $('channels-list').replaceChildren(...list.map((c) => {
        const key = 'chat:' + c.platform + ':' + c.chat_id + (c.thread_id ? ':' + c.thread_id : '');
        return el('div', { class: 'item card' },
          el('div', { class: 'item-head' }, el('span', { class: 'title', text: c.display || key }), el('span', { class: 'badge', text: c.platform })),
          el('div', { class: 'muted', text: key + ' · seen ' + new Date(c.seen_at).toLocaleString() }),
          el('div', { class: 'row' }, el('button', { type: 'button', class: 'secondary small', text: 'Add as target', onclick: () => addTarget(key) })));
      }));
    } catch (e) {
      $('channels-note').textContent = '⚠ ' + e.message;
      $('channels-list').replaceChildren();
    }
  }
  $('channel-query').addEventListener('input', () => { clearTimeout(channelTimer); channelTimer = setTimeout(loadChannels, 250); });
  $('channels-rebuild').addEventListener('click', async () => {
    try {
      const r = await api('POST', '/api/channels/rebuild');
      $('channels-note').textContent = 'Rebuilt: ' + (r.count || 0) + ' channels.';
      loadChannels();
    } catch (e) { $('channels-note').textContent = '⚠ ' + e.message; }
  });

  // ---- Targets -------------------------------------------------------------

  async function loadTargets() {
    try {
      const v = await api('GET', '/api/targets');
      const last = v.last_delivery_by_target || {};
      $('targets-list').replaceChildren(...(v.targets.length === 0
        ? [el('p', { class: 'muted', text: 'No delivery targets yet.' })]
        : v.targets.map((t) => el('div', { class: 'item card' },
          el('div', { class: 'item-head' }, el('span', { class: 'key', text: t }),
            can('admin.targets') ? el('button', { type: 'button', class: 'ghost small danger', text: 'Remove', 'aria-label': 'Remove ' + t, onclick: () => removeTarget(t) }) : null),
          last[t] ? el('div', { class: 'muted', text: 'last delivery: ' + last[t] }) : null))));
    } catch (e) {
      $('targets-list').replaceChildren(el('p', { class: 'error', text: '⚠ ' + e.message }));
    }
  }
  async function addTarget(t) {
    try {
      const r = await api('POST', '/api/targets', { target: t });
      $('targets-note').textContent = (r.changed ? 'Added ' + r.target + '.' : r.target + ' was already a target.') +
        (r.note ? ' ' + r.note + '.' : '');
    } catch (e) { $('targets-note').textContent = '⚠ ' + e.message; }
    showView('targets');
  }
  async function removeTarget(t) {
    try {
      await api('DELETE', '/api/targets?target=' + encodeURIComponent(t));
      $('targets-note').textContent = 'Removed ' + t + '.';
    } catch (e) { $('targets-note').textContent = '⚠ ' + e.message; }
    loadTargets();
  }
  $('target-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const t = $('target-input').value.trim();
    if (!t) return;
    await addTarget(t);
    $('target-input').value = '';
  });

  // ---- Outbox --------------------------------------------------------------

  let outboxState = 'pending';
  for (const b of document.querySelectorAll('.segmented button')) {
    b.addEventListener('click', () => {
      outboxState = b.dataset.state;
      for (const o of document.querySelectorAll('.segmented button')) o.setAttribute('aria-pressed', String(o === b));
      loadOutbox();
    });
  }
  $('outbox-refresh').addEventListener('click', () => loadOutbox());

  async function loadOutbox() {
    try {
      const list = await api('GET', '/api/outbox?state=' + outboxState + '&limit=200');
      const names = { pending: 'pending entries', dead: 'dead letters', delivered: 'delivered entries (kept for dedupe)' };
      $('outbox-note').textContent = list.length === 0 ? 'No ' + names[outboxState] + '.' : list.length + ' ' + names[outboxState] + '.';
      $('outbox-list').replaceChildren(...list.map((e) => el('div', { class: 'item card' },
        el('div', { class: 'item-head' },
          el('span', { class: 'key', text: e.id }),
          el('span', { class: 'badge ' + e.state, text: e.state })),
        el('div', { class: 'muted', text: 'to ' + e.target + ' · chunk ' + (e.index + 1) + '/' + e.total + ' · attempts ' + e.attempts }),
        e.last_error ? el('div', { class: 'last-error', text: e.last_error }) : null,
        el('div', { class: 'text', text: (e.text || '').slice(0, 400) }),
        e.state === 'dead' && can('admin.outbox') ? el('div', { class: 'row' }, el('button', { type: 'button', class: 'primary small', text: 'Retry', onclick: () => retry(e.id) })) : null)));
    } catch (err) {
      $('outbox-note').textContent = '⚠ ' + err.message;
      $('outbox-list').replaceChildren();
    }
  }
  async function retry(id) {
    try {
      await api('POST', '/api/outbox/retry', { id });
      $('outbox-note').textContent = 'Queued ' + id + ' again.';
    } catch (e) { $('outbox-note').textContent = '⚠ ' + e.message; }
    setTimeout(loadOutbox, 300);
  }

  // ---- Workspace -----------------------------------------------------------
  //
  // Where the web conversation works (GET /api/workspace, what /where says)
  // and a select of the workspaces it may use: choosing one sends /use NAME
  // through the conversation, "Automatic" sends /use --default. The bar
  // says it in plain words; the exact rule and destination are its title.

  let wsBusy = false;
  const wsRuns = { local: 'on this machine', docker: 'in a container', remote: 'on a remote machine' };
  const wsRules = {
    call: 'named by the call',
    use: 'you chose it',
    chat: 'set for this chat by the hub',
    role: 'set for your role by the hub',
    default: 'the default',
  };

  function wsWords(cur) {
    return [cur.name, wsRuns[cur.runs], wsRules[cur.rule]].filter(Boolean).join(' · ');
  }

  async function loadWorkspace() {
    try {
      const v = await api('GET', '/api/workspace');
      const sel = $('ws-select');
      const usable = v.usable || [];
      const opts = [el('option', { value: '', text: 'Automatic', title: 'The workspace set for this chat or your role, else the default' })].concat(
        usable.map((w) => el('option', { value: w.name, text: w.name, title: w.destination })));
      sel.replaceChildren(...opts);
      sel.value = v.chosen && usable.some((w) => w.name === v.chosen) ? v.chosen : '';
      sel.hidden = usable.length === 0;
      const cur = v.current || {};
      $('ws-where').textContent = v.error ? '⚠ ' + v.error : wsWords(cur);
      $('ws-where').title = v.error ? v.error : cur.name + ': ' + cur.destination + '; chosen by ' + cur.reason;
      $('ws-bar').dataset.current = cur.name || '';
      $('ws-bar').hidden = false;
    } catch (e) {
      if (e.status !== 401) {
        $('ws-where').textContent = '⚠ ' + e.message;
        $('ws-bar').hidden = false;
      }
    }
  }

  $('ws-select').addEventListener('change', async () => {
    if (wsBusy) return;
    wsBusy = true;
    const sel = $('ws-select');
    sel.disabled = true;
    try {
      await send('/use ' + (sel.value || '--default'));
    } catch (e) {
      /* shown in the conversation */
    } finally {
      sel.disabled = false;
      wsBusy = false;
      loadWorkspace();
    }
  });

  // ---- Access --------------------------------------------------------------

  function when(ts) {
    const d = new Date(ts);
    return isNaN(d) || d.getFullYear() < 2000 ? '' : d.toLocaleString();
  }

  async function loadAccess() {
    try {
      const v = await api('GET', '/api/access');
      const roleSel = $('approve-role');
      const cur = roleSel.value;
      roleSel.replaceChildren(...(v.roles || []).map((r) => el('option', { value: r, text: r })));
      if (cur && (v.roles || []).includes(cur)) roleSel.value = cur;
      else if ((v.roles || []).includes('reader')) roleSel.value = 'reader';
      const codes = (v.codes || []).filter((c) => !c.used);
      $('codes-list').replaceChildren(...(codes.length === 0
        ? [el('p', { class: 'muted', text: 'No pairing code is waiting.' })]
        : codes.map((c) => el('div', { class: 'item card code-item' },
          el('div', { class: 'item-head' }, el('span', { class: 'key', text: c.identity }), el('span', { class: 'badge', text: 'pending' })),
          el('div', { class: 'muted', text: 'issued ' + when(c.created) + ' · expires ' + when(c.expires) }),
          el('div', { class: 'muted small', text: 'The code itself is not kept (only its hash): ask the person for it.' })))));
      const grants = v.grants || [];
      $('grants-list').replaceChildren(...(grants.length === 0
        ? [el('p', { class: 'muted', text: 'No grants.' })]
        : grants.map((g) => el('div', { class: 'item card grant-item', dataset: { identity: g.identity, source: g.source } },
          el('div', { class: 'item-head' },
            el('span', { class: 'key', text: g.identity }),
            el('span', { class: 'row' },
              el('span', { class: 'badge', text: g.role }),
              el('span', { class: 'badge source ' + g.source, text: g.source === 'config' ? 'configuration' : 'approved' }))),
          g.source === 'state' ? el('div', { class: 'muted', text: 'approved' + (g.approved_by ? ' by ' + g.approved_by : '') + (when(g.at) ? ' · ' + when(g.at) : '') }) : el('div', { class: 'muted', text: 'access.grants in the configuration (edit it, then hub reload)' }),
          g.inactive ? el('div', { class: 'last-error', text: g.inactive }) : null,
          g.source === 'state' ? el('div', { class: 'row' }, el('button', { type: 'button', class: 'ghost small danger', text: 'Revoke', 'aria-label': 'Revoke ' + g.identity, onclick: () => revokeGrant(g.identity) })) : null))));
    } catch (e) {
      $('access-note').textContent = '⚠ ' + e.message;
    }
  }

  $('approve-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const code = $('approve-code').value.trim();
    const role = $('approve-role').value;
    if (!code) return;
    try {
      const r = await api('POST', '/api/access/approve', { code, role });
      $('access-note').textContent = 'Approved: ' + r.grant.identity + ' now holds ' + r.grant.role + '.' + (r.note ? ' ' + r.note + '.' : '');
      $('approve-code').value = '';
    } catch (err) {
      $('access-note').textContent = '⚠ ' + err.message;
    }
    loadAccess();
  });
  $('access-refresh').addEventListener('click', () => loadAccess());

  async function revokeGrant(identity) {
    if (!confirm('Revoke every approved grant of ' + identity + '?')) return;
    try {
      const r = await api('POST', '/api/access/revoke', { identity });
      $('access-note').textContent = 'Revoked ' + identity + ' (' + (r.removed || []).map((g) => g.role).join(', ') + ').';
    } catch (e) {
      $('access-note').textContent = '⚠ ' + e.message;
    }
    loadAccess();
  }

  // ---- Nodes ---------------------------------------------------------------

  async function loadNodes() {
    try {
      const v = await api('GET', '/api/nodes');
      if (!v.configured) {
        $('nodes-note').textContent = 'Remote nodes are not configured on this hub (docs/nodes.md: a nats: section and nodes:).';
        $('nodes-list').replaceChildren();
        return;
      }
      const nodes = v.nodes || [];
      const online = nodes.filter((n) => n.online).length;
      $('nodes-note').textContent = nodes.length + ' node' + (nodes.length === 1 ? '' : 's') + ', ' + online + ' online.';
      $('nodes-list').replaceChildren(...nodes.map((n) => el('div', { class: 'item card node-item', dataset: { node: n.name, online: String(!!n.online) } },
        el('div', { class: 'item-head' },
          el('span', { class: 'key', text: n.name }),
          el('span', { class: 'badge ' + (n.online ? 'online' : 'offline'), text: n.online ? 'online' : 'offline' })),
        el('div', { class: 'muted', text: [n.version ? 'version ' + n.version : 'no heartbeat yet', when(n.last_seen) ? 'last seen ' + when(n.last_seen) : ''].filter(Boolean).join(' · ') }),
        el('div', { class: 'muted', text: 'workspaces: ' + ((n.workspaces || []).join(', ') || 'none') }),
        el('div', { class: 'muted', text: 'load ' + (n.load || [0, 0, 0]).map((x) => Number(x).toFixed(2)).join(' ') + ' · ' + (n.running || 0) + ' running' }))));
    } catch (e) {
      $('nodes-note').textContent = '⚠ ' + e.message;
      $('nodes-list').replaceChildren();
    }
  }
  $('nodes-refresh').addEventListener('click', () => loadNodes());

  // ---- Schedules -----------------------------------------------------------
  //
  // GET /api/schedules: each schedule with its next run, its last run and
  // the roles of its identity; Run now (admin.schedules) starts a run.

  // fmtTime shows a schedule's time in its own zone, with the zone's name.
  function fmtTime(ts, zone) {
    const d = new Date(ts);
    if (isNaN(d) || d.getFullYear() < 2000) return '';
    const opts = { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'short' };
    try {
      return d.toLocaleString([], { ...opts, timeZone: zone });
    } catch (e) {
      return d.toLocaleString([], opts); // a zone the browser does not know
    }
  }

  function scheduleNotes(v) {
    const notes = [];
    if (!v.allowed) notes.push(v.identity + ' may not run ' + v.verb + ': its runs are refused (grant it a role that names ' + v.verb + ' under access.grants).');
    const m = v.missed_runs;
    if (m) notes.push(m.count + ' run' + (m.count === 1 ? '' : 's') + ' missed while the hub was down (' + fmtTime(m.first, v.time_zone) + ' to ' + fmtTime(m.last, v.time_zone) + '): ' + (m.policy === 'run_once' ? 'the latest ran.' : 'skipped.'));
    const l = v.last;
    if (l && l.detail && l.outcome !== 'succeeded') notes.push(l.detail);
    return notes;
  }

  function scheduleItem(v) {
    const l = v.last;
    const outcome = v.running ? 'running' : (l ? l.outcome : 'never run');
    return el('div', { class: 'item card schedule-item', dataset: { schedule: v.name, outcome: l ? l.outcome : '' } },
      el('div', { class: 'item-head' },
        el('span', { class: 'key', text: v.name }),
        el('span', { class: 'badge ' + outcome, text: outcome })),
      el('div', { class: 'muted', text: v.cron + ' (' + v.time_zone + ') · next ' + (fmtTime(v.next, v.time_zone) || 'none') }),
      el('div', { class: 'muted', text: 'runs ' + v.verb + (v.workspace ? ' in ' + v.workspace : '') + ' as ' + v.identity + ' (' + ((v.roles || []).join(', ') || 'no role') + ')' }),
      el('div', { class: 'muted', text: 'delivers to ' + ((v.deliver || []).join(', ') || 'no target: the mirror only') }),
      l ? el('div', { class: 'muted last-run', text: 'last run ' + fmtTime(l.scheduled, v.time_zone) + (l.manual ? ' (by hand)' : '') + ': ' + l.outcome + (l.code && l.code !== l.outcome ? ' (' + l.code + ')' : '') }) : null,
      ...scheduleNotes(v).map((n) => el('div', { class: 'last-error', text: n })),
      can('admin.schedules') ? el('div', { class: 'row' }, el('button', { type: 'button', class: 'secondary small', text: 'Run now', 'aria-label': 'Run ' + v.name + ' now', onclick: () => runSchedule(v.name) })) : null);
  }

  // loadSchedules lists the schedules; note, when given, stays as the line
  // above them (what Run now did).
  async function loadSchedules(note) {
    try {
      const list = await api('GET', '/api/schedules');
      $('schedules-note').textContent = list.length === 0
        ? 'No schedules: add them under schedules: in the configuration (docs/chatops.md).'
        : (note || list.length + ' schedule' + (list.length === 1 ? '' : 's') + '.');
      $('schedules-list').replaceChildren(...list.map(scheduleItem));
    } catch (e) {
      $('schedules-note').textContent = '⚠ ' + e.message;
      $('schedules-list').replaceChildren();
    }
  }
  $('schedules-refresh').addEventListener('click', () => loadSchedules());

  async function runSchedule(name) {
    let note;
    try {
      const r = await api('POST', '/api/schedules/run', { name });
      note = 'Started ' + name + ': turn ' + r.turn_id + '.';
    } catch (e) {
      note = '⚠ ' + e.message;
    }
    $('schedules-note').textContent = note;
    setTimeout(() => loadSchedules(note), 500);
  }

  // ---- History -------------------------------------------------------------
  //
  // GET /api/mirror/search with the form's filters: the turns of every
  // retained run, read as they stream (one JSON object a line).

  const historyLimit = 200;
  let historySearch = null;

  function historyQuery() {
    const q = new URLSearchParams();
    for (const f of ['identity', 'chat', 'verb', 'workspace', 'outcome']) {
      const v = $('history-' + f).value.trim();
      if (v) q.set(f, v);
    }
    for (const f of ['since', 'until']) {
      const v = $('history-' + f).value;
      if (v) q.set(f, new Date(v).toISOString());
    }
    q.set('limit', String(historyLimit));
    return q;
  }

  function historyItem(t) {
    const outcome = t.outcome || 'no answer';
    return el('div', { class: 'item card turn-item', dataset: { turn: t.turn_id, outcome: t.outcome || '' } },
      el('div', { class: 'item-head' },
        el('span', { class: 'key', text: (t.verb || t.kind) + ' · ' + t.identity }),
        el('span', { class: 'badge ' + (t.outcome || ''), text: outcome + (t.error_code && t.error_code !== t.outcome ? ' (' + t.error_code + ')' : '') })),
      el('div', { class: 'muted', text: [new Date(t.ts).toLocaleString(), t.chat, t.workspace ? 'workspace ' + t.workspace : '', 'turn ' + t.turn_id].filter(Boolean).join(' · ') }),
      el('div', { class: 'text', text: t.request || '' }),
      t.answer ? el('div', { class: 'muted answer', text: '→ ' + t.answer }) : null);
  }

  async function searchHistory() {
    if (historySearch) historySearch.abort();
    const ctl = new AbortController();
    historySearch = ctl;
    $('history-list').replaceChildren();
    $('history-note').textContent = 'Searching…';
    let n = 0;
    const show = (line) => {
      if (!line.trim()) return;
      const t = JSON.parse(line);
      if (t.error) throw new Error(t.error);
      $('history-list').append(historyItem(t));
      n++;
    };
    try {
      const res = await fetch('/api/mirror/search?' + historyQuery(), { credentials: 'same-origin', signal: ctl.signal });
      if (!res.ok) {
        const data = await res.json().catch(() => ({}));
        if (res.status === 401) showLogin('Your session has ended: log in again.');
        throw new Error(data.error || res.statusText);
      }
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        const lines = buf.split('\n');
        buf = lines.pop();
        lines.forEach(show);
      }
      show(buf);
      $('history-note').textContent = n === 0 ? 'No turn matches.' : n + ' turn' + (n === 1 ? '' : 's') + (n >= historyLimit ? ' (the first ' + historyLimit + ' from since: narrow the filters)' : '') + '.';
    } catch (e) {
      if (e.name !== 'AbortError') $('history-note').textContent = '⚠ ' + e.message;
    }
  }

  function loadHistory() {
    if (!$('history-since').value) {
      // By default the last day, in local time as the field shows it.
      const d = new Date(Date.now() - 24 * 3600 * 1000);
      d.setMinutes(d.getMinutes() - d.getTimezoneOffset());
      $('history-since').value = d.toISOString().slice(0, 16);
    }
    searchHistory();
  }
  $('history-form').addEventListener('submit', (e) => { e.preventDefault(); searchHistory(); });

  // ---- Status line ---------------------------------------------------------

  async function refreshStatus() {
    try {
      const st = await api('GET', '/api/status');
      const parts = [];
      let pending = 0;
      let dead = 0;
      for (const p of Object.values((st.outbox && st.outbox.platforms) || {})) {
        pending += p.pending || 0;
        dead += p.dead || 0;
      }
      parts.push('outbox ' + pending + ' pending' + (dead ? ', ' + dead + ' dead' : ''));
      for (const a of st.adapters || []) parts.push(a.name + ' ' + a.state);
      if (st.web) parts.push(st.web.clients + ' live client' + (st.web.clients === 1 ? '' : 's'));
      if (st.run_id) parts.push('run ' + st.run_id);
      $('status-text').textContent = parts.join(' · ');
      $('status-text').title = parts.join('\n');
    } catch (e) {
      if (e.status !== 401) $('status-text').textContent = '⚠ ' + e.message;
    }
  }

  boot();
})();
