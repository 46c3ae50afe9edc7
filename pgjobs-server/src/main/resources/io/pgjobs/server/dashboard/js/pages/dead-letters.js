// Dead letters: failed jobs grouped by type and the exception class (or kind) of their last error, each group with a
// "retry all" action (confirmed, result shown). Reloads when jobs fail or leave the failed state.

import {get, post} from '../api.js';
import {h, fmtNumber, timeAgo, message, errorMessage, shortId, throttle} from '../dom.js';
import {loader} from './common.js';

export default function deadLettersPage(root, {events, confirm}) {
  const result = h('div', {id: 'action-result'});
  const error = h('div');
  const summary = h('p', {class: 'muted', id: 'dead-letter-summary'});
  const body = h('tbody');
  root.append(
    h('h1', null, 'Dead letters'),
    result,
    h('section', {class: 'panel'},
      summary, error,
      h('div', {class: 'table-wrap'}, h('table', {id: 'dead-letters-table'},
        h('thead', null, h('tr', null,
          h('th', null, 'Type'), h('th', null, 'Error'), h('th', {class: 'num'}, 'Jobs'), h('th', {class: 'opt'}, 'Queues'),
          h('th', {class: 'opt'}, 'Latest'), h('th', {class: 'opt'}, 'Examples'), h('th', null, ''))),
        body))));

  function render(d) {
    const total = d.groups.reduce((s, g) => s + g.count, 0);
    summary.textContent = d.groups.length
      ? `${fmtNumber(total)} failed jobs in ${d.groups.length} group${d.groups.length > 1 ? 's' : ''}`
        + (d.truncated ? ` (the newest ${fmtNumber(d.scanned)} failed jobs were read; there are more)` : '')
      : '';
    body.replaceChildren(...(d.groups.length ? d.groups.map(g => h('tr', {dataset: {type: g.type, count: g.count}},
      h('td', null, h('a', {href: '#/jobs?state=failed&type=' + encodeURIComponent(g.type)}, g.type)),
      h('td', {class: 'wrap err-line'}, h('code', null, g.error), g.message && g.message !== g.error
        ? [h('br'), h('span', {class: 'muted', title: 'the newest one'}, g.message)] : null),
      h('td', {class: 'num'}, fmtNumber(g.count)),
      h('td', {class: 'opt'}, g.queues.join(', ')),
      h('td', {class: 'opt'}, timeAgo(g.latest_failed_at)),
      h('td', {class: 'opt'}, g.job_ids.slice(0, 3).map((id, i) => [i ? ' ' : '', h('a', {class: 'mono', href: '#/jobs/' + id}, shortId(id))])),
      h('td', {class: 'num'}, h('button', {type: 'button', class: 'retry-group', onclick: () => retryGroup(g)},
        `Retry all ${fmtNumber(g.count)}`))))
      : [h('tr', null, h('td', {class: 'empty', colspan: 7}, 'No failed jobs. '))]));
  }

  async function retryGroup(g) {
    const yes = await confirm('Retry this group?',
      `${fmtNumber(g.count)} failed ${g.type} job${g.count > 1 ? 's' : ''} with the error “${g.error}” will be queued again, each with a full set of attempts.`,
      'Retry all');
    if (!yes) return;
    try {
      const r = await post('/dead-letters/retry', {type: g.type, error: g.error});
      result.replaceChildren(message('ok', h('span', {class: 'code'}, r.status),
        `Queued again: ${fmtNumber(r.body.retried)} ${g.type} job${r.body.retried === 1 ? '' : 's'}.`));
    } catch (e) {
      result.replaceChildren(errorMessage('Retry failed', e));
    }
    load();
  }

  const load = loader('dead letters', error, () => get('/dead-letters'), render);
  const soon = throttle(load, 3000);
  load();
  const stops = [
    events.on('state', e => {
      if (e.state === 'failed') soon();
    }),
    events.on('snapshot', () => soon()),
  ];
  return () => {
    stops.forEach(stop => stop());
    soon.cancel();
  };
}
