// Queues: pause and resume, and flow-control limits. A paused queue keeps its jobs queued (workers stop
// claiming from it at their next claim; running jobs go on), and jobs can still be enqueued into it. A
// limited queue shows its limits, how much of them is used now, why its jobs wait, and its busiest
// partitions; "Edit limits" sets them (PUT /queues/{name}/limits) and shows a refusal's problem in place.

import {get, post, request} from '../api.js';
import {h, fmtNumber, fmtDuration, message, errorMessage, throttle, timeAgo} from '../dom.js';
import {loader, every} from './common.js';

/** Why due jobs wait, in words (the API's waiting_for values). */
const WHY = {
  at_global_limit: 'at global limit',
  rate_limited: 'rate limited',
  partitions_busy: 'partitions busy',
  partition_busy: 'partition busy',
};

/** The busiest partitions shown per queue (the API reports up to 50). */
const PARTITIONS_SHOWN = 5;

/** "100/min", "5/s", "10 per 250ms". */
export function fmtRate(rate) {
  const unit = {'1ms': 'ms', '1s': 's', '1m': 'min', '1h': 'h', '1d': 'day', '24h': 'day'}[rate.period];
  return unit ? `${fmtNumber(rate.limit)}/${unit}` : `${fmtNumber(rate.limit)} per ${rate.period}`;
}

/** "10 at once · 100/min · per input.host: 2 at once, 5/s". */
export function fmtLimits(l) {
  const parts = [];
  if (l.global_concurrency != null) parts.push(`${fmtNumber(l.global_concurrency)} at once`);
  if (l.rate) parts.push(fmtRate(l.rate));
  if (l.partition_by) {
    const per = [];
    if (l.partition_concurrency != null) per.push(`${fmtNumber(l.partition_concurrency)} at once`);
    if (l.partition_rate) per.push(fmtRate(l.partition_rate));
    parts.push(`per ${l.partition_by}` + (per.length ? ': ' + per.join(', ') : ' (turns only)'));
  }
  return parts.join(' · ');
}

export default function queuesPage(root, {events}) {
  const result = h('div', {id: 'action-result'});
  const error = h('div');
  const body = h('tbody');
  const nameInput = h('input', {id: 'queue-name', placeholder: 'queue name', autocomplete: 'off', required: true});
  // The open limits form (one at a time), kept across re-renders so what is typed survives live updates.
  let editing = null;

  root.append(
    h('h1', null, 'Queues'),
    result,
    h('section', {class: 'panel'},
      error,
      h('div', {class: 'table-wrap'}, h('table', {id: 'queues-admin-table'},
        h('thead', null, h('tr', null,
          h('th', null, 'Queue'), h('th', null, 'Status'), h('th', {class: 'num'}, 'Waiting'), h('th', {class: 'num'}, 'Running'),
          h('th', {class: 'num opt'}, 'Oldest ready'), h('th', null, 'Limits'), h('th', null, ''))),
        body))),
    h('form', {class: 'panel filters', onsubmit: e => {
      e.preventDefault();
      if (nameInput.value.trim()) setPaused(nameInput.value.trim(), true);
    }},
    h('label', {class: 'grow'}, 'Pause a queue before it has jobs', nameInput),
    h('button', {type: 'submit'}, 'Pause')));

  function render(queues) {
    const rows = [];
    for (const q of queues) {
      rows.push(h('tr', {dataset: {queue: q.name, paused: q.paused, limited: !!q.limits}},
        h('td', null, h('a', {href: '#/jobs?queue=' + encodeURIComponent(q.name)}, q.name)),
        h('td', {class: 'status'}, q.paused ? h('span', {class: 'badge paused'}, 'paused') : h('span', {class: 'muted'}, 'active'),
          unrunnable(q), unserved(q)),
        h('td', {class: 'num'}, fmtNumber(q.counts.queued + q.counts.retrying)),
        h('td', {class: 'num'}, fmtNumber(q.counts.running)),
        h('td', {class: 'num opt'}, q.oldest_ready_age_ms == null ? '–' : fmtDuration(q.oldest_ready_age_ms)),
        h('td', {class: 'limits wrap'}, limits(q)),
        h('td', {class: 'num actions-cell'},
          h('div', {class: 'actions'},
            h('button', {type: 'button', class: 'edit-limits', onclick: () => edit(q)}, 'Edit limits'),
            q.paused
              ? h('button', {type: 'button', class: 'resume', onclick: () => setPaused(q.name, false)}, 'Resume')
              : h('button', {type: 'button', class: 'pause danger', onclick: () => setPaused(q.name, true)}, 'Pause')))));
      if (editing && editing.queue === q.name) rows.push(editing.row);
    }
    const kept = editing && rows.includes(editing.row) && editing.row.parentNode === body ? editing.row : null;
    if (!kept) {
      body.replaceChildren(...(rows.length ? rows
        : [h('tr', null, h('td', {class: 'empty', colspan: 7}, 'No queues yet.'))]));
      return;
    }
    // The open form stays in the document: a row taken out and put back loses the focus of the field
    // being typed in, and the keys that follow land nowhere. The rows around it are replaced.
    for (const row of [...body.children]) if (row !== kept) row.remove();
    const at = rows.indexOf(kept);
    kept.before(...rows.slice(0, at));
    kept.after(...rows.slice(at + 1));
  }

  // A limited queue's limits, their use now, why its jobs wait, and its busiest partitions.
  function limits(q) {
    const l = q.limits;
    if (!l) return h('span', {class: 'muted'}, 'none');
    const u = l.usage;
    const running = l.global_concurrency != null
      ? `${fmtNumber(u.running)} of ${fmtNumber(l.global_concurrency)} running`
      : `${fmtNumber(u.running)} running`;
    return [
      h('div', {class: 'limits-summary', title: `set by ${l.source}` + (l.updated_at ? ' ' + new Date(l.updated_at).toISOString() : '')},
        fmtLimits(l)),
      h('div', {class: 'limits-usage muted'}, running, ` · ${fmtNumber(u.waiting)} waiting`,
        u.next_start ? [' · next start ', timeAgo(u.next_start)] : null),
      u.waiting_for ? h('span', {class: 'badge limit-why', dataset: {why: u.waiting_for}}, WHY[u.waiting_for] || u.waiting_for) : null,
      partitions(l),
    ];
  }

  function partitions(l) {
    const shown = (l.usage.partitions || []).slice(0, PARTITIONS_SHOWN);
    if (!l.partition_by || !shown.length) return null;
    const more = l.usage.partitions.length - shown.length;
    return h('table', {class: 'partitions'},
      h('thead', null, h('tr', null, h('th', null, 'Partition'), h('th', {class: 'num'}, 'Running'),
        h('th', {class: 'num'}, 'Waiting'), h('th', null, 'Waiting for'))),
      h('tbody', null, shown.map(p => h('tr', {dataset: {partition: p.partition}},
        h('td', null, p.partition === '' ? h('span', {class: 'muted'}, '(none)') : p.partition),
        h('td', {class: 'num'}, fmtNumber(p.running)),
        h('td', {class: 'num'}, fmtNumber(p.waiting)),
        h('td', null, p.waiting_for ? WHY[p.waiting_for] || p.waiting_for : '–')))),
      more > 0 ? h('caption', {class: 'muted'}, `busiest ${shown.length} of ${l.usage.partitions.length}`) : null);
  }

  // Jobs that need a capability no live worker of the queue declares: they wait (they are not failed)
  // until a worker with it starts, so say so rather than let them look merely slow.
  function unrunnable(q) {
    const u = q.unrunnable;
    if (!u || !u.count) return null;
    const caps = u.capabilities.join(', ');
    return h('span', {class: 'badge unrunnable', title: `No live worker of queue ${q.name} declares ${caps}:`
        + ' these jobs stay queued until one starts (pgjobs work --capabilities ...).'},
      `${fmtNumber(u.count)} need ${caps}, no live worker has it`);
  }

  // Jobs waiting in a queue no live worker serves (a typo in the queue's name, a worker not started).
  function unserved(q) {
    if (!q.unserved) return null;
    return h('span', {class: 'badge unrunnable unserved', title: `No live worker serves queue ${q.name}: its jobs`
        + ' wait until one does (pgjobs work --queues ' + q.name + '=N, or the queue of a JobType).'},
      'no live worker serves this queue');
  }

  // The limits form of one queue, filled from its limits now; empty fields are limits not set.
  function edit(q) {
    if (editing && editing.queue === q.name) {
      editing = null;
      load();
      return;
    }
    const l = q.limits || {};
    const field = (name, label, value, attrs) => h('label', null, label,
      h('input', {name, value: value ?? '', autocomplete: 'off', ...attrs}));
    const number = {type: 'number', min: '1', step: '1'};
    const problem = h('div', {class: 'limits-problem'});
    // novalidate: the server's problem says what is wrong and what is allowed, in place.
    const form = h('form', {class: 'limits-form', novalidate: true, onsubmit: e => {
      e.preventDefault();
      save(q.name, form, problem);
    }},
    h('div', {class: 'form-grid'},
      field('global_concurrency', 'At once (whole queue)', l.global_concurrency, number),
      field('rate_limit', 'Starts per period', l.rate?.limit, number),
      field('rate_period', 'Period (1s, 1m, 250ms)', l.rate?.period, {placeholder: '1s'}),
      field('partition_by', 'Partition by (type, partition, input.<field>)', l.partition_by, {placeholder: 'input.host'}),
      field('partition_concurrency', 'At once per partition', l.partition_concurrency, number),
      h('div', {class: 'pair'},
        field('partition_rate_limit', 'Starts per partition', l.partition_rate?.limit, number),
        field('partition_rate_period', 'Period', l.partition_rate?.period, {placeholder: '1s'}))),
    problem,
    h('div', {class: 'buttons'},
      q.limits ? h('button', {type: 'button', class: 'remove-limits danger', onclick: () => remove(q.name, problem)}, 'Remove limits') : null,
      h('button', {type: 'button', onclick: () => edit(q)}, 'Cancel'),
      h('button', {type: 'submit', class: 'primary save-limits'}, 'Save limits')));
    editing = {queue: q.name, row: h('tr', {class: 'limits-edit', dataset: {editing: q.name}}, h('td', {colspan: 7}, form))};
    load();
  }

  // The form as a PUT body: empty fields are left out, numbers sent as typed (the server says what is wrong).
  function limitsBody(form) {
    const v = name => form.elements[name].value.trim();
    const num = name => (v(name) === '' ? undefined : (Number.isFinite(Number(v(name))) ? Number(v(name)) : v(name)));
    const rate = (limit, period) => (v(limit) === '' && v(period) === '' ? undefined
      : {limit: num(limit) ?? null, period: v(period) || null});
    const out = {
      global_concurrency: num('global_concurrency'),
      rate: rate('rate_limit', 'rate_period'),
      partition_by: v('partition_by') || undefined,
      partition_concurrency: num('partition_concurrency'),
      partition_rate: rate('partition_rate_limit', 'partition_rate_period'),
    };
    return Object.fromEntries(Object.entries(out).filter(([, value]) => value !== undefined));
  }

  async function save(name, form, problem) {
    try {
      await request('PUT', `/queues/${encodeURIComponent(name)}/limits`, limitsBody(form));
      editing = null;
      result.replaceChildren(message('ok', `Queue ${name}'s limits are set: every worker's next claim obeys them.`));
    } catch (e) {
      problem.replaceChildren(errorMessage(`Cannot set ${name}'s limits`, e));
      return;
    }
    load();
  }

  async function remove(name, problem) {
    try {
      await request('DELETE', `/queues/${encodeURIComponent(name)}/limits`);
      editing = null;
      result.replaceChildren(message('ok', `Queue ${name} has no limits now: its workers claim as fast as their lanes allow.`));
    } catch (e) {
      problem.replaceChildren(errorMessage(`Cannot remove ${name}'s limits`, e));
      return;
    }
    load();
  }

  async function setPaused(name, paused) {
    for (const b of body.querySelectorAll('button')) b.disabled = true;
    try {
      const r = await post(`/queues/${encodeURIComponent(name)}/${paused ? 'pause' : 'resume'}`);
      result.replaceChildren(message('ok', h('span', {class: 'code'}, r.status), paused
        ? `Queue ${name} is paused: its jobs stay queued until it is resumed.`
        : `Queue ${name} is resumed: workers claim its jobs again.`));
    } catch (e) {
      result.replaceChildren(errorMessage(`Cannot ${paused ? 'pause' : 'resume'} ${name}`, e));
    }
    load();
  }

  const load = loader('queues', error, () => get('/queues'), d => render(d.queues));
  const soon = throttle(load, 2000);
  load();
  const stops = [
    events.on('state', () => soon()),
    events.on('snapshot', s => s?.queues && render(s.queues)),
    // Every 2 s, not 10 as the job counts alone would need: limits changed elsewhere (the CLI, another
    // dashboard) and what they hold back change without a job event. The server serves the counts from
    // its cache when they are costly, and the limits are a second old at most.
    every(2000, load),
  ];
  return () => {
    stops.forEach(stop => stop());
    soon.cancel();
  };
}
