// Queues: pause and resume. A paused queue keeps its jobs queued (workers stop claiming from it at
// their next claim; running jobs go on), and jobs can still be enqueued into it.

import {get, post} from '../api.js';
import {h, fmtNumber, fmtDuration, message, errorMessage, throttle} from '../dom.js';
import {loader, every} from './common.js';

export default function queuesPage(root, {events}) {
  const result = h('div', {id: 'action-result'});
  const error = h('div');
  const body = h('tbody');
  const nameInput = h('input', {id: 'queue-name', placeholder: 'queue name', autocomplete: 'off', required: true});

  root.append(
    h('h1', null, 'Queues'),
    result,
    h('section', {class: 'panel'},
      error,
      h('div', {class: 'table-wrap'}, h('table', {id: 'queues-admin-table'},
        h('thead', null, h('tr', null,
          h('th', null, 'Queue'), h('th', null, 'Status'), h('th', {class: 'num'}, 'Waiting'), h('th', {class: 'num'}, 'Running'),
          h('th', {class: 'num opt'}, 'Oldest ready'), h('th', null, ''))),
        body))),
    h('form', {class: 'panel filters', onsubmit: e => {
      e.preventDefault();
      if (nameInput.value.trim()) setPaused(nameInput.value.trim(), true);
    }},
    h('label', {class: 'grow'}, 'Pause a queue before it has jobs', nameInput),
    h('button', {type: 'submit'}, 'Pause')));

  function render(queues) {
    body.replaceChildren(...(queues.length ? queues.map(q => h('tr', {dataset: {queue: q.name, paused: q.paused}},
      h('td', null, h('a', {href: '#/jobs?queue=' + encodeURIComponent(q.name)}, q.name)),
      h('td', {class: 'status'}, q.paused ? h('span', {class: 'badge paused'}, 'paused') : h('span', {class: 'muted'}, 'active'),
        unrunnable(q), unserved(q)),
      h('td', {class: 'num'}, fmtNumber(q.counts.queued + q.counts.retrying)),
      h('td', {class: 'num'}, fmtNumber(q.counts.running)),
      h('td', {class: 'num opt'}, q.oldest_ready_age_ms == null ? '–' : fmtDuration(q.oldest_ready_age_ms)),
      h('td', {class: 'num'}, q.paused
        ? h('button', {type: 'button', class: 'resume', onclick: () => setPaused(q.name, false)}, 'Resume')
        : h('button', {type: 'button', class: 'pause danger', onclick: () => setPaused(q.name, true)}, 'Pause'))))
      : [h('tr', null, h('td', {class: 'empty', colspan: 6}, 'No queues yet.'))]));
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
    every(10000, load),
  ];
  return () => {
    stops.forEach(stop => stop());
    soon.cancel();
  };
}
