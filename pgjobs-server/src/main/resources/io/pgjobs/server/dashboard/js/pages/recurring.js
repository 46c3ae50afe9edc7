// Recurring: every cron schedule with its expression in words, zone, next fire times and last run (a
// link to the job), with pause/resume and run now. Schedules declared in code can be paused, resumed and
// run now like the others; adding, replacing and removing go through the API or the CLI.

import {get, post} from '../api.js';
import {h, message, errorMessage, fmtTime, stateBadge, shortId, timeAgo} from '../dom.js';
import {loader, every} from './common.js';

/** "2026-11-30 09:00:00" in the schedule's zone (the cron's fields are read there); local time if the browser lacks the zone. */
function inZone(iso, zone) {
  try {
    return new Intl.DateTimeFormat('sv-SE', {timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false}).format(new Date(iso));
  } catch {
    return fmtTime(iso);
  }
}

export default function recurringPage(root) {
  const result = h('div', {id: 'action-result'});
  const error = h('div');
  const body = h('tbody');

  root.append(
    h('h1', null, 'Recurring'),
    result,
    h('section', {class: 'panel'},
      error,
      h('div', {class: 'table-wrap'}, h('table', {id: 'recurring-table'},
        h('thead', null, h('tr', null,
          h('th', null, 'Schedule'), h('th', null, 'Expression'), h('th', null, 'Zone'),
          h('th', null, 'Next fire times (in its zone)'), h('th', null, 'Last run'), h('th', null, 'Status'), h('th', null, ''))),
        body))),
    h('p', {class: 'hint'}, 'Add, replace and remove schedules with ', h('code', null, 'POST /recurring'), ' (see ',
      h('a', {href: 'docs'}, 'the API'), ') or ', h('code', null, 'pgjobs recurring add'),
      '; schedules declared in code change with the code.'));

  function lastRun(run) {
    if (!run) return h('span', {class: 'muted'}, 'none yet');
    return h('span', {class: 'last-run'},
      h('a', {href: '#/jobs/' + run.job_id, class: 'mono last-run-link', title: run.job_id}, shortId(run.job_id)), ' ',
      run.state ? stateBadge(run.state) : h('span', {class: 'muted'}, 'no longer kept'), ' ',
      run.finished_at ? timeAgo(run.finished_at) : run.created_at ? timeAgo(run.created_at) : null);
  }

  function render(schedules) {
    body.replaceChildren(...(schedules.length ? schedules.map(s => h('tr', {dataset: {name: s.name, paused: s.paused, source: s.source}},
      h('td', null, h('strong', null, s.name), ' ', h('span', {class: 'muted'}, s.type), ' ',
        s.source === 'code' ? h('span', {class: 'badge', title: 'declared in code'}, 'code') : null),
      h('td', {class: 'expression'}, h('code', null, s.cron), h('div', {class: 'muted words'}, s.description)),
      h('td', {class: 'zone'}, s.zone),
      h('td', null, h('ol', {class: 'next-runs', style: 'margin:0;padding-left:1.2em'}, s.next_runs.map(t =>
        h('li', null, h('time', {datetime: t, title: t + ' (your time: ' + fmtTime(t) + ')'}, inZone(t, s.zone)))))),
      h('td', null, lastRun(s.last_run)),
      h('td', {class: 'status'}, s.disabled ? h('span', {class: 'badge'}, 'disabled')
        : s.paused ? h('span', {class: 'badge paused'}, 'paused') : h('span', {class: 'muted'}, 'active')),
      h('td', {class: 'num'},
        s.paused
          ? h('button', {type: 'button', class: 'resume', onclick: () => act(s.name, 'resume')}, 'Resume')
          : h('button', {type: 'button', class: 'pause danger', onclick: () => act(s.name, 'pause')}, 'Pause'),
        ' ',
        h('button', {type: 'button', class: 'run-now', onclick: () => act(s.name, 'run')}, 'Run now'))))
      : [h('tr', null, h('td', {class: 'empty', colspan: 7}, 'No recurring schedules yet.'))]));
  }

  async function act(name, action) {
    for (const b of body.querySelectorAll('button')) b.disabled = true;
    try {
      const r = await post(`/recurring/${encodeURIComponent(name)}/${action}`);
      result.replaceChildren(action === 'run'
        ? message('ok', h('span', {class: 'code'}, r.status), `Schedule ${name} ran now: job `,
          h('a', {href: '#/jobs/' + r.body.id, id: 'run-now-job'}, r.body.id), ' enqueued.')
        : message('ok', h('span', {class: 'code'}, r.status), action === 'pause'
          ? `Schedule ${name} is paused: its slots do not fire until it is resumed.`
          : `Schedule ${name} is resumed.`));
    } catch (e) {
      result.replaceChildren(errorMessage(`Cannot ${action === 'run' ? 'run' : action} ${name}`, e));
    }
    load();
  }

  const load = loader('recurring schedules', error, () => get('/recurring'), d => render(d.schedules));
  load();
  // Polled: next fire times move on and last runs finish.
  const stop = every(5000, load);
  return () => stop();
}
