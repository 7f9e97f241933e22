// The page of `dsh-session-ref serve`: a composer with an `@` picker whose
// picks are atomic chips holding the canonical mention, "Prepare" with a
// compact source summary, and a reader paged newest first. Plain DOM, no
// framework; every text from a session is set with textContent (the page's
// Content-Security-Policy allows no inline script or style either).
'use strict';

(() => {
  const TARGET = { id: 'web' };
  const PICKER_LIMIT = 20;        // the picker shows the server's top N, never the whole store
  const SEARCH_MIN = 2;           // shorter queries list candidates; longer ones search what was said
  const DEBOUNCE_MS = 120;
  const READ_BYTES = 16384;       // one reader page (the library's default budget)

  const $ = (id) => document.getElementById(id);
  const composer = $('composer');
  const picker = $('picker');
  const pickerList = $('picker-list');
  const pickerStatus = $('picker-status');
  const chipCard = $('chip-card');

  // ---------------------------------------------------------------- API

  class ApiError extends Error {
    constructor(code, message) { super(message); this.code = code; }
  }

  async function api(path, body, signal) {
    let response;
    try {
      response = await fetch(path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        credentials: 'same-origin',
        body: JSON.stringify(body),
        signal,
      });
    } catch (err) {
      if (err && err.name === 'AbortError') throw err;
      throw new ApiError('NETWORK', 'The server did not answer: is dsh-session-ref serve still running?');
    }
    let value = null;
    try { value = await response.json(); } catch (_) { value = null; }
    if (!response.ok) {
      const code = value && typeof value.code === 'string' ? value.code : `HTTP_${response.status}`;
      const message = value && typeof value.message === 'string' ? value.message : response.statusText;
      throw new ApiError(code, message);
    }
    return value;
  }

  // A result list, whether the server answers with an array or an object holding one.
  function listOf(value, key) {
    if (Array.isArray(value)) return value;
    if (value && Array.isArray(value[key])) return value[key];
    return [];
  }

  // ---------------------------------------------------------- display helpers

  // Ids, cwds and titles are source data: control characters are shown as
  // visible escapes (the mention itself keeps the original text).
  function display(text) {
    return String(text).replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  }

  function formatDate(ms) {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
    const d = new Date(ms);
    if (Number.isNaN(d.getTime())) return '';
    return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Appends `text` to `parent`, each occurrence of a query word wrapped in <mark>.
  function appendHighlighted(parent, text, query) {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) { parent.append(text); return; }
    const lower = text.toLowerCase();
    let at = 0;
    while (at < text.length) {
      let best = -1, len = 0;
      for (const w of words) {
        const i = lower.indexOf(w, at);
        if (i !== -1 && (best === -1 || i < best)) { best = i; len = w.length; }
      }
      // (lower-casing can change a string's length; then no marks, plain text)
      if (best === -1 || lower.length !== text.length) { parent.append(text.slice(at)); return; }
      if (best > at) parent.append(text.slice(at, best));
      parent.append(el('mark', '', text.slice(best, best + len)));
      at = best + len;
    }
  }

  // ------------------------------------------------------------- composer

  function isChip(node) {
    return !!node && node.nodeType === Node.ELEMENT_NODE && node.classList.contains('chip');
  }

  // The message as text, each chip written by `chipText` (its canonical
  // mention, or the `@label` a mention reads as).
  function composerText(chipText) {
    let out = '';
    const walk = (node) => {
      for (const child of node.childNodes) {
        if (child.nodeType === Node.TEXT_NODE) out += child.data;
        else if (isChip(child)) out += chipText(child);
        else if (child.nodeName === 'BR') out += '\n';
        else if (child.nodeType === Node.ELEMENT_NODE) {
          if ((child.nodeName === 'DIV' || child.nodeName === 'P') && out && !out.endsWith('\n')) out += '\n';
          walk(child);
        }
      }
    };
    walk(composer);
    return out.replace(/\u00a0/g, ' ');
  }

  function chips() { return Array.from(composer.querySelectorAll('.chip')); }

  function makeChip(item) {
    const chip = el('span', 'chip', `@${display(item.label)}`);
    chip.contentEditable = 'false';
    chip.dataset.mention = item.mention;
    chip.dataset.sessionId = item.sessionId;
    chip.dataset.label = item.label;
    if (typeof item.cwd === 'string') chip.dataset.cwd = item.cwd;
    if (typeof item.createdAt === 'number') chip.dataset.createdAt = String(item.createdAt);
    const parts = [`Session ${display(item.label)}`, `id ${display(item.sessionId)}`];
    if (typeof item.cwd === 'string') parts.push(`in ${display(item.cwd)}`);
    if (typeof item.createdAt === 'number') parts.push(`created ${formatDate(item.createdAt)}`);
    chip.setAttribute('aria-label', parts.join(', '));
    return chip;
  }

  function placeCaret(node, offset) {
    const range = document.createRange();
    range.setStart(node, offset);
    range.collapse(true);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  // Inserts `node` (and a space after it) at the caret, or at the end.
  function insertAtCaret(node) {
    const sel = window.getSelection();
    let range;
    if (sel.rangeCount && composer.contains(sel.getRangeAt(0).startContainer)) {
      range = sel.getRangeAt(0);
      range.deleteContents();
    } else {
      range = document.createRange();
      range.selectNodeContents(composer);
      range.collapse(false);
    }
    const space = document.createTextNode(' ');
    range.insertNode(space);
    range.insertNode(node);
    placeCaret(space, 1);
  }

  // The node just before (or after) a collapsed caret, across empty text nodes.
  function besideCaret(backward) {
    const sel = window.getSelection();
    if (!sel.rangeCount || !sel.isCollapsed) return null;
    let node = sel.anchorNode, offset = sel.anchorOffset;
    if (!composer.contains(node)) return null;
    if (node.nodeType === Node.TEXT_NODE) {
      if (backward ? offset > 0 : offset < node.data.length) return null;
    } else {
      const next = backward ? node.childNodes[offset - 1] : node.childNodes[offset];
      if (next) return next.nodeType === Node.TEXT_NODE && next.data === '' ? sibling(next, backward) : next;
      if (node === composer) return null;
    }
    return sibling(node, backward);
  }

  function sibling(node, backward) {
    let s = backward ? node.previousSibling : node.nextSibling;
    while (s && s.nodeType === Node.TEXT_NODE && s.data === '') s = backward ? s.previousSibling : s.nextSibling;
    return s;
  }

  function removeChip(chip) {
    const prev = chip.previousSibling;
    const at = prev && prev.nodeType === Node.TEXT_NODE ? [prev, prev.data.length] : null;
    chip.remove();
    if (at) placeCaret(at[0], at[1]);
    hideCard();
    updateNear();
  }

  // The `@query` before the caret, when the caret is in text that follows an `@`.
  function triggerAtCaret() {
    const sel = window.getSelection();
    if (!sel.rangeCount || !sel.isCollapsed) return null;
    const node = sel.anchorNode;
    if (!node || node.nodeType !== Node.TEXT_NODE || !composer.contains(node)) return null;
    const before = node.data.slice(0, sel.anchorOffset);
    const m = /(^|[\s([{"'])@([^@\n]{0,80})$/u.exec(before);
    if (!m) return null;
    const start = m.index + m[1].length;
    return { node, start, end: sel.anchorOffset, query: m[2].replace(/\u00a0/g, ' ') };
  }

  // ---------------------------------------------------------------- picker

  const pick = {
    open: false,
    items: [],
    active: -1,
    trigger: null,
    dismissed: null,     // the `@` the user closed with Escape: not reopened for it
    seq: 0,
    timer: 0,
    abort: null,
    query: null,
  };

  function setExpanded(open) {
    pick.open = open;
    picker.hidden = !open;
    composer.setAttribute('aria-expanded', String(open));
    if (!open) {
      composer.removeAttribute('aria-activedescendant');
      pick.active = -1;
    }
  }

  function closePicker() {
    clearTimeout(pick.timer);
    if (pick.abort) pick.abort.abort();
    pick.abort = null;
    pick.items = [];
    pick.query = null;
    pickerList.replaceChildren();
    setExpanded(false);
  }

  function onComposerChange() {
    const trigger = triggerAtCaret();
    if (!trigger) { pick.dismissed = null; closePicker(); return; }
    if (pick.dismissed && pick.dismissed.node === trigger.node && pick.dismissed.start === trigger.start) {
      if (pick.open) closePicker();
      return;
    }
    pick.dismissed = null;
    pick.trigger = trigger;
    if (trigger.query === pick.query) return;
    clearTimeout(pick.timer);
    pick.timer = setTimeout(() => runQuery(trigger.query), DEBOUNCE_MS);
    if (!pick.open) {
      setExpanded(true);
      pickerStatus.textContent = 'Searching…';
    }
  }

  async function runQuery(query) {
    pick.query = query;
    const seq = ++pick.seq;
    if (pick.abort) pick.abort.abort();
    const abort = new AbortController();
    pick.abort = abort;
    const words = query.trim();
    const searching = words.length >= SEARCH_MIN;
    pickerStatus.textContent = searching ? 'Searching what was said…' : 'Sessions…';
    let items;
    try {
      const value = searching
        ? await api('/api/search', { target: TARGET, query: words, limit: PICKER_LIMIT }, abort.signal)
        : await api('/api/candidates', { target: TARGET, query: words, limit: PICKER_LIMIT }, abort.signal);
      items = listOf(value, searching ? 'results' : 'candidates');
    } catch (err) {
      if (err && err.name === 'AbortError') return;
      if (seq !== pick.seq) return;
      showItems([], query, `Could not search: ${err.message}`);
      return;
    }
    if (seq !== pick.seq || !pick.open) return;
    // Prose after an `@` (words with spaces that match nothing) closes the picker.
    if (!items.length && /\s/.test(query.trim())) { closePicker(); return; }
    showItems(items, words, items.length ? '' : 'No session matches.');
  }

  function showItems(items, query, status) {
    pick.items = items;
    pickerStatus.textContent = status ||
      `${items.length} session${items.length === 1 ? '' : 's'}${items.length === PICKER_LIMIT ? ' (the best first)' : ''}`;
    const rows = items.map((item, i) => {
      const li = el('li', 'option');
      li.id = `option-${i}`;
      li.setAttribute('role', 'option');
      li.setAttribute('aria-selected', 'false');
      const title = el('div', 'option-title');
      appendHighlighted(title, display(item.label), query);
      const meta = [display(item.sessionId)];
      if (typeof item.cwd === 'string') meta.push(display(item.cwd));
      const date = formatDate(item.createdAt);
      if (date) meta.push(date);
      li.append(title, el('div', 'option-meta', meta.join(' · ')));
      if (typeof item.snippet === 'string' && item.snippet && item.field !== 'title') {
        const snippet = el('div', 'option-snippet');
        appendHighlighted(snippet, display(item.snippet), query);
        li.append(snippet);
      }
      li.addEventListener('mousedown', (ev) => { ev.preventDefault(); choose(i); });
      li.addEventListener('mousemove', () => { if (pick.active !== i) setActive(i, false); });
      return li;
    });
    pickerList.replaceChildren(...rows);
    setActive(items.length ? 0 : -1, false);
  }

  function setActive(i, scroll = true) {
    const rows = pickerList.children;
    if (pick.active >= 0 && rows[pick.active]) rows[pick.active].setAttribute('aria-selected', 'false');
    pick.active = i;
    if (i < 0 || !rows[i]) { composer.removeAttribute('aria-activedescendant'); return; }
    rows[i].setAttribute('aria-selected', 'true');
    composer.setAttribute('aria-activedescendant', rows[i].id);
    if (scroll) rows[i].scrollIntoView({ block: 'nearest' });
  }

  function choose(i) {
    const item = pick.items[i];
    const trigger = triggerAtCaret() || pick.trigger;
    if (!item || !trigger || typeof item.mention !== 'string') return;
    const { node, start } = trigger;
    const end = Math.min(trigger.end, node.data.length);
    // Split the text node around the `@query` and put the chip in its place.
    const after = node.splitText(end);
    node.data = node.data.slice(0, start);
    const chip = makeChip(item);
    const space = document.createTextNode(after.data.startsWith(' ') ? '' : ' ');
    after.parentNode.insertBefore(chip, after);
    after.parentNode.insertBefore(space, after);
    if (space.data) placeCaret(space, 1); else placeCaret(after, 1);
    closePicker();
    composer.focus();
    updateNear();
  }

  // ------------------------------------------------------- chip card (hover, focus)

  let nearChip = null;

  function showCard(chip) {
    const rows = [['Session', display(chip.dataset.label)], ['Id', display(chip.dataset.sessionId)]];
    if (chip.dataset.cwd !== undefined) rows.push(['Cwd', display(chip.dataset.cwd)]);
    const date = formatDate(Number(chip.dataset.createdAt));
    if (chip.dataset.createdAt !== undefined && date) rows.push(['Created', date]);
    const dl = el('dl');
    for (const [k, v] of rows) dl.append(el('dt', '', k), el('dd', '', v));
    chipCard.replaceChildren(dl);
    const wrap = chipCard.offsetParent || document.body;
    const box = chip.getBoundingClientRect();
    const base = wrap.getBoundingClientRect();
    chipCard.hidden = false;
    chipCard.style.left = `${Math.max(0, box.left - base.left)}px`;
    chipCard.style.top = `${box.bottom - base.top + 6}px`;
  }

  function hideCard() { chipCard.hidden = true; }

  // The chip beside the caret is "focused": outlined, its card shown.
  function updateNear() {
    const before = besideCaret(true);
    const after = besideCaret(false);
    const chip = isChip(before) ? before : isChip(after) ? after : null;
    if (chip === nearChip) return;
    if (nearChip) nearChip.classList.remove('near');
    nearChip = chip;
    if (chip) { chip.classList.add('near'); showCard(chip); } else hideCard();
  }

  composer.addEventListener('mouseover', (ev) => {
    const chip = ev.target.closest && ev.target.closest('.chip');
    if (chip) showCard(chip);
  });
  composer.addEventListener('mouseout', (ev) => {
    const chip = ev.target.closest && ev.target.closest('.chip');
    if (chip && chip !== nearChip) hideCard();
  });
  composer.addEventListener('click', (ev) => {
    const chip = ev.target.closest && ev.target.closest('.chip');
    if (chip) openReader(chip.dataset.sessionId, chip.dataset.label);
  });

  // ------------------------------------------------------------ composer keys

  composer.addEventListener('keydown', (ev) => {
    if (pick.open && !ev.isComposing) {
      const n = pick.items.length;
      if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
        ev.preventDefault();
        if (n) setActive(((pick.active < 0 ? (ev.key === 'ArrowDown' ? -1 : 0) : pick.active) + (ev.key === 'ArrowDown' ? 1 : -1) + n) % n);
        return;
      }
      if ((ev.key === 'Enter' || ev.key === 'Tab') && pick.active >= 0) {
        ev.preventDefault();
        choose(pick.active);
        return;
      }
      if (ev.key === 'Escape') {
        ev.preventDefault();
        pick.dismissed = triggerAtCaret();
        closePicker();
        return;
      }
    }
    if (ev.key === 'Backspace' || ev.key === 'Delete') {
      const node = besideCaret(ev.key === 'Backspace');
      if (isChip(node)) { ev.preventDefault(); removeChip(node); return; }
    }
    if (ev.key === 'ArrowDown' && ev.altKey && nearChip) {
      ev.preventDefault();
      openReader(nearChip.dataset.sessionId, nearChip.dataset.label);
      return;
    }
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      prepare();
      return;
    }
    if (ev.key === 'Enter' && !ev.isComposing) {
      ev.preventDefault();
      insertText('\n');
    }
  });

  function insertText(text) {
    const sel = window.getSelection();
    if (!sel.rangeCount) return;
    const range = sel.getRangeAt(0);
    range.deleteContents();
    const node = document.createTextNode(text);
    range.insertNode(node);
    placeCaret(node, text.length);
    composer.normalize();
  }

  // Pasted rich text arrives as plain text: nothing of another page's markup enters.
  composer.addEventListener('paste', (ev) => {
    ev.preventDefault();
    const text = ev.clipboardData ? ev.clipboardData.getData('text/plain') : '';
    if (text) insertText(text);
    onComposerChange();
  });
  composer.addEventListener('drop', (ev) => ev.preventDefault());
  composer.addEventListener('input', onComposerChange);
  composer.addEventListener('blur', () => { setTimeout(() => { if (document.activeElement !== composer) closePicker(); }, 0); });
  document.addEventListener('selectionchange', () => {
    if (document.activeElement !== composer) return;
    updateNear();
    if (pick.open) {
      const t = triggerAtCaret();
      if (!t || !pick.trigger || t.node !== pick.trigger.node || t.start !== pick.trigger.start) closePicker();
    }
  });

  // The message with its canonical mentions, for a harness that takes them.
  $('copy-message').addEventListener('click', () => {
    copyText(composerText((chip) => chip.dataset.mention), $('compose-status'), 'message');
  });

  async function copyText(value, status, what) {
    try {
      await navigator.clipboard.writeText(value);
      status.textContent = `Copied the ${what}.`;
    } catch (_) {
      status.textContent = `Copy this ${what}: ${value}`;
    }
  }

  $('clear').addEventListener('click', () => {
    composer.replaceChildren();
    closePicker();
    hideCard();
    $('prepared').hidden = true;
    composer.focus();
  });

  // ---------------------------------------------------------------- prepare

  $('prepare').addEventListener('click', prepare);

  // What a host makes of a message with mentions: its readable text (each
  // chip as `@label`) and the sessions it references, in first-mention order.
  // The chips hold both, so nothing is parsed here.
  async function prepare() {
    const text = composerText((chip) => `@${chip.dataset.label}`);
    const seen = new Set();
    const references = [];
    for (const chip of chips()) {
      if (seen.has(chip.dataset.sessionId)) continue;
      seen.add(chip.dataset.sessionId);
      references.push({ sessionId: chip.dataset.sessionId, label: chip.dataset.label });
    }
    const section = $('prepared');
    const error = $('prepare-error');
    section.hidden = false;
    error.hidden = true;
    $('prepared-body').hidden = true;
    let result;
    try {
      result = await api('/api/prepare', { target: TARGET, content: [{ type: 'text', text }], references });
    } catch (err) {
      error.textContent = `${err.code ? `${err.code}: ` : ''}${err.message}`;
      error.hidden = false;
      return;
    }
    showPrepared(result, references);
  }

  function textOf(content) {
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return '';
    return content.filter((b) => b && b.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n');
  }

  function plural(n, word) { return `${n} ${word}${n === 1 ? '' : 's'}`; }
  function bytes(n) { return n < 1024 ? plural(n, 'byte') : `${(n / 1024).toFixed(1)} KB`; }
  const utf8 = new TextEncoder();

  function showPrepared(result, references) {
    $('prepared-text').textContent = textOf(result && result.content);
    const context = result && result.additionalContext;
    const refs = context && context.source && Array.isArray(context.source.references) ? context.source.references : [];
    const prompt = context ? textOf(context.content) : '';
    const list = $('sources');
    list.replaceChildren(...refs.map((ref) => {
      const li = el('li', 'source');
      const title = el('div', 'source-title', display(ref.label));
      const complete = !ref.truncated && !ref.omittedMessages;
      title.append(el('span', `badge ${complete ? 'complete' : 'truncated'}`, complete ? 'complete' : 'truncated'));
      if (ref.compacted) title.append(el('span', 'badge checkpoint', 'compacted'));
      const stats = [
        `${plural(ref.retainedMessages, 'message')} retained`,
        `${ref.omittedMessages} omitted`,
      ];
      if (ref.omittedBytes) stats.push(`${bytes(ref.omittedBytes)} cut`);
      li.append(title, el('div', 'source-stats', stats.join(' · ')),
        el('div', 'source-stats', `id ${display(ref.sessionId)}`));
      return li;
    }));
    const details = $('context');
    details.hidden = !context;
    details.open = false;
    $('context-summary').textContent = context
      ? `Context the model reads (${bytes(utf8.encode(prompt).length)} from ${plural(refs.length, 'session')})`
      : 'Context the model reads';
    $('context-text').textContent = prompt;
    if (!context) list.replaceChildren(el('li', 'meta', references.length ? '' : 'No session referenced: the message goes as it is.'));
    $('prepared-body').hidden = false;
  }

  // ----------------------------------------------------------------- reader

  const reader = { sessionId: null, label: null, prevCursor: null, seq: 0, busy: false };

  async function openReader(sessionId, label) {
    const seq = ++reader.seq;
    reader.sessionId = sessionId;
    reader.label = label;
    reader.prevCursor = null;
    $('reader-empty').hidden = true;
    $('reader-body').hidden = false;
    $('reader-label').textContent = display(label || sessionId);
    $('reader-meta').textContent = `id ${display(sessionId)}`;
    $('copy-status').textContent = '';
    $('messages').replaceChildren();
    $('load-older').hidden = true;
    $('reader-start').hidden = true;
    await loadPage(seq, undefined);
  }

  async function loadPage(seq, cursor) {
    const error = $('reader-error');
    error.hidden = true;
    reader.busy = true;
    let page;
    try {
      const body = { target: TARGET, sessionId: reader.sessionId, maxBytes: READ_BYTES };
      if (cursor) body.cursor = cursor;
      page = await api('/api/read', body);
    } catch (err) {
      if (seq !== reader.seq) return;
      error.textContent = `${err.code ? `${err.code}: ` : ''}${err.message}`;
      error.hidden = false;
      return;
    } finally {
      reader.busy = false;
    }
    if (seq !== reader.seq) return;
    if (typeof page.label === 'string') {
      reader.label = page.label;
      $('reader-label').textContent = display(page.label);
    }
    const meta = [`id ${display(page.sessionId || reader.sessionId)}`];
    if (typeof page.cwd === 'string') meta.push(display(page.cwd));
    if (typeof page.totalMessages === 'number') meta.push(plural(page.totalMessages, 'message'));
    $('reader-meta').textContent = meta.join(' · ');
    const list = $('messages');
    const items = (Array.isArray(page.messages) ? page.messages : []).map(renderMessage);
    // Older pages go above what is shown; the view stays where it was.
    const anchor = list.firstElementChild;
    const top = anchor ? anchor.getBoundingClientRect().top : 0;
    list.prepend(...items);
    if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - top);
    reader.prevCursor = typeof page.prevCursor === 'string' ? page.prevCursor : null;
    const older = $('load-older');
    const hadFocus = document.activeElement === older;
    older.hidden = !reader.prevCursor;
    $('reader-start').hidden = !!reader.prevCursor;
    if (hadFocus && older.hidden && items.length) {
      items[0].tabIndex = -1;
      items[0].focus();
    }
  }

  function renderMessage(m) {
    const li = el('li', `message ${m.role === 'user' ? 'user' : 'assistant'}${m.checkpoint ? ' checkpoint' : ''}`);
    li.dataset.index = String(m.index);
    const head = el('div', 'message-head', `#${m.index} · ${m.checkpoint ? 'checkpoint' : m.role}`);
    if (m.checkpoint) head.append(el('span', 'badge checkpoint', 'checkpoint'));
    if (typeof m.omittedBytes === 'number') head.append(` · ${bytes(m.omittedBytes)} cut`);
    li.append(head, el('div', 'message-text', typeof m.text === 'string' ? m.text : ''));
    return li;
  }

  // What the server offers: how many sessions, its version.
  (async () => {
    try {
      const response = await fetch('/api/info', { credentials: 'same-origin' });
      const info = response.ok ? await response.json() : null;
      if (info && typeof info.sessions === 'number') {
        $('info').textContent = `${info.sessions.toLocaleString()} session${info.sessions === 1 ? '' : 's'}` +
          `${info.hardened ? ' · hardened' : ''}${typeof info.version === 'string' ? ` · dsh-session-ref ${info.version}` : ''}`;
      }
    } catch (_) { /* the header line is optional */ }
  })();

  $('load-older').addEventListener('click', () => {
    if (reader.prevCursor && !reader.busy) loadPage(reader.seq, reader.prevCursor);
  });

  async function mentionOf(sessionId, label) {
    return api('/api/mention', { sessionId, label });
  }

  async function copy(kind) {
    const status = $('copy-status');
    let value;
    try {
      const m = await mentionOf(reader.sessionId, reader.label);
      value = kind === 'uri' ? m.uri : m.mention;
    } catch (err) {
      status.textContent = `Could not make the mention: ${err.message}`;
      return;
    }
    copyText(value, status, kind === 'uri' ? 'URI' : 'mention');
  }

  $('copy-mention').addEventListener('click', () => copy('mention'));
  $('copy-uri').addEventListener('click', () => copy('uri'));
  $('insert-chip').addEventListener('click', async () => {
    try {
      const m = await mentionOf(reader.sessionId, reader.label);
      composer.focus();
      insertAtCaret(makeChip({ sessionId: reader.sessionId, label: reader.label, mention: m.mention }));
      updateNear();
    } catch (err) {
      $('copy-status').textContent = `Could not make the mention: ${err.message}`;
    }
  });
})();
