// Small DOM and formatting helpers shared by the pages.

/**
 * Creates an element: h('a', {href: '#/', class: 'x', onclick: fn, dataset: {id: 1}}, 'text', child, ...).
 * Children may be strings, numbers, nodes, arrays of them, or null/false (skipped).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false || key === 'value') continue;
    if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key in el && typeof value !== 'string') el[key] = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  append(el, children);
  // After the children, so a <select>'s value can name one of its options.
  if (attrs && attrs.value != null) el.value = attrs.value;
  return el;
}

/** Replaces el's children; children as for h() (arrays flattened, null and false skipped). */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child == null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** An SVG element (h() for the chart). */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value != null) el.setAttribute(key, value);
  }
  append(el, children);
  return el;
}

/** Every job state, in the order the dashboard shows them. */
export const STATES = ['queued', 'running', 'retrying', 'failed', 'cancelled', 'succeeded', 'blocked'];
export const WAITING = ['queued', 'retrying'];
export const FINISHED = ['succeeded', 'failed', 'cancelled'];

/** A state badge; a queued job due later shows as "scheduled". */
export function stateBadge(state, scheduled) {
  const shown = state === 'queued' && scheduled ? 'scheduled' : state;
  return h('span', {class: `badge s-${shown}`, dataset: {state}}, shown);
}

/** A progress bar; `big` for the job page. Update it with setProgress(). */
export function progressBar(percent, big) {
  const el = h('div', {class: 'progress' + (big ? ' big' : ''), role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100'},
    h('div', {class: 'bar'}, h('span')), h('span', {class: 'pct'}));
  setProgress(el, percent);
  return el;
}

export function setProgress(el, percent, done) {
  const p = percent == null ? 0 : Math.max(0, Math.min(100, percent));
  el.querySelector('.bar > span').style.width = p + '%';
  el.querySelector('.pct').textContent = percent == null ? '–' : p + '%';
  el.setAttribute('aria-valuenow', String(p));
  el.dataset.percent = String(p);
  el.classList.toggle('done', !!done);
}

export function shortId(id) {
  return id ? id.slice(0, 8) + '…' + id.slice(-4) : '';
}

export function fmtNumber(n) {
  return n == null ? '–' : Number(n).toLocaleString('en-US');
}

/** "850 ms", "12 s", "4 min 5 s", "3 h 12 min", "2 d 4 h". */
export function fmtDuration(ms) {
  if (ms == null) return '–';
  if (ms < 1000) return Math.max(0, Math.round(ms)) + ' ms';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min' + (s % 60 ? ' ' + (s % 60) + ' s' : '');
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return hrs + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
  return Math.floor(hrs / 24) + ' d' + (hrs % 24 ? ' ' + (hrs % 24) + ' h' : '');
}

/** "12 s ago" or "in 4 min" relative to now. */
export function fmtRelative(iso) {
  if (!iso) return '–';
  const diff = Date.now() - Date.parse(iso);
  if (Math.abs(diff) < 1000) return 'just now';
  return diff >= 0 ? fmtDuration(diff) + ' ago' : 'in ' + fmtDuration(-diff);
}

/** Local date and time, "2026-11-25 14:03:07". */
export function fmtTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  const p = n => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** A <time> showing a relative time, with the absolute one as its title; kept fresh by tickTimes(). */
export function timeAgo(iso) {
  if (!iso) return h('span', {class: 'muted'}, '–');
  return h('time', {datetime: iso, title: fmtTime(iso), dataset: {rel: '1'}}, fmtRelative(iso));
}

/** Refreshes every relative time under `root` (called once a second by the app). */
export function tickTimes(root) {
  for (const t of root.querySelectorAll('time[data-rel]')) {
    t.textContent = fmtRelative(t.getAttribute('datetime'));
  }
}

export function prettyJson(value) {
  return value === undefined ? '' : JSON.stringify(value, null, 2);
}

/**
 * Calls fn at most once per `ms`, and always once more after the last request (trailing edge), so the
 * last change is never lost. Returns a function with .cancel().
 */
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  const run = () => {
    timer = null;
    last = Date.now();
    fn();
  };
  const throttled = () => {
    if (timer) return;
    const wait = Math.max(0, last + ms - Date.now());
    timer = setTimeout(run, wait);
  };
  throttled.cancel = () => clearTimeout(timer);
  return throttled;
}

/** A message box: kind is ok, info or error. */
export function message(kind, ...content) {
  return h('div', {class: `msg ${kind}`, role: kind === 'error' ? 'alert' : 'status'}, ...content);
}

/** A message for a failed request: status code, the problem's detail and its field errors. */
export function errorMessage(prefix, error) {
  const fields = error.problem?.errors || [];
  return message('error',
    error.status ? h('span', {class: 'code'}, error.status) : null,
    prefix ? prefix + ': ' : '', error.message,
    fields.length ? h('ul', null, fields.map(f => h('li', null, h('code', null, f.field), ' ', f.reason))) : null);
}

/** Parses "a=1&b=2" with repeated keys kept as arrays only when repeated. */
export function parseQuery(text) {
  const out = {};
  for (const [k, v] of new URLSearchParams(text)) {
    out[k] = k in out ? [].concat(out[k], v) : v;
  }
  return out;
}
