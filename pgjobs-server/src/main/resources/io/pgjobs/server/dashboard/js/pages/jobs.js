// Jobs: a table of jobs, newest first, filtered by state, type, queue and text in payload or context,
// a page at a time (keyset cursors). States and progress bars follow the event stream; on the first
// page new matching jobs appear by themselves. "Cancel matching" and "Retry matching" act on every job
// the state, type and queue filters match: the API is asked for the count first (a dry run), and the
// confirmation says how many jobs it is about.

import {get, post, query} from '../api.js';
import {h, STATES, FINISHED, stateBadge, progressBar, setProgress, timeAgo, throttle, fmtNumber, message, errorMessage} from '../dom.js';
import {loader, jobTypes} from './common.js';

const PAGE_SIZE = 50;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export default function jobsPage(root, {query: initial, events, confirm, navigate}) {
  const filters = {
    state: single(initial.state),
    type: single(initial.type),
    queue: single(initial.queue),
    text: single(initial.text),
  };
  let cursor = null;       // the cursor of the page shown (null: the first page)
  const older = [];        // cursors of the pages before it, to go back
  let nextCursor = null;
  const rows = new Map();  // job id -> {tr, job}

  const stateSelect = h('select', {name: 'state', id: 'filter-state', value: filters.state},
    h('option', {value: ''}, 'any state'),
    STATES.flatMap(s => s === 'queued' ? [h('option', {value: s}, s), h('option', {value: 'scheduled'}, 'scheduled')] : [h('option', {value: s}, s)]));
  const typeInput = h('input', {name: 'type', id: 'filter-type', list: 'known-types', placeholder: 'any type', value: filters.type, autocomplete: 'off'});
  const queueInput = h('input', {name: 'queue', id: 'filter-queue', list: 'known-queues', placeholder: 'any queue', value: filters.queue, autocomplete: 'off'});
  const textInput = h('input', {name: 'text', id: 'filter-text', type: 'search', placeholder: 'text in payload or context', value: filters.text, maxlength: '200'});
  const typeList = h('datalist', {id: 'known-types'});
  const queueList = h('datalist', {id: 'known-queues'});
  const error = h('div');
  const body = h('tbody');
  const pageInfo = h('span', {class: 'muted', id: 'page-info'});
  const newerButton = h('button', {type: 'button', id: 'page-newer', onclick: () => go(older.pop() ?? null)}, '← Newer');
  const olderButton = h('button', {type: 'button', id: 'page-older', onclick: () => {
    older.push(cursor);
    go(nextCursor);
  }}, 'Older →');

  const form = h('form', {class: 'filters panel', id: 'job-filters', onsubmit: e => {
    e.preventDefault();
    apply();
  }},
  h('label', null, 'State', stateSelect),
  h('label', null, 'Type', typeInput),
  h('label', null, 'Queue', queueInput),
  h('label', {class: 'grow'}, 'Text', textInput),
  h('button', {type: 'submit', class: 'primary', id: 'filter-apply'}, 'Filter'),
  h('button', {type: 'button', onclick: () => {
    stateSelect.value = typeInput.value = queueInput.value = textInput.value = '';
    apply();
  }}, 'Clear'),
  typeList, queueList);

  const cancelButton = h('button', {type: 'button', class: 'danger', id: 'bulk-cancel', onclick: () => bulk('cancel')},
    'Cancel matching…');
  const retryButton = h('button', {type: 'button', id: 'bulk-retry', onclick: () => bulk('retry')}, 'Retry matching…');
  const bulkResult = h('div', {id: 'bulk-result'});
  const bulkBar = h('div', {class: 'bulk-actions', id: 'bulk-actions'}, cancelButton, retryButton);
  // Straight to one job by its id (what a log line or an API answer shows).
  const idInput = h('input', {id: 'job-id-input', name: 'id', type: 'search', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'job id, e.g. 0190c1e2-7a4b-7c3d-8e9f-0a1b2c3d4e5f', 'aria-label': 'Job id'});
  const idError = h('p', {class: 'field-error', id: 'job-id-error'});
  const idForm = h('form', {class: 'panel', id: 'job-id-search', onsubmit: e => {
    e.preventDefault();
    const id = idInput.value.trim();
    if (UUID.test(id)) {
      navigate('/jobs/' + id.toLowerCase());
    } else {
      idError.textContent = id ? `"${id}" is not a job id: a job id is a UUID (36 characters with dashes)` : 'enter a job id';
      idInput.classList.add('invalid');
    }
  }},
  h('label', {class: 'grow'}, 'Find a job by id', idInput),
  h('button', {type: 'submit', id: 'job-id-go'}, 'Open'),
  idError);

  root.append(
    h('h1', null, 'Jobs'),
    idForm,
    form,
    bulkBar,
    bulkResult,
    h('section', {class: 'panel'},
      error,
      h('div', {class: 'table-wrap'}, h('table', {id: 'jobs-table'},
        h('thead', null, h('tr', null,
          h('th', null, 'Job'), h('th', null, 'Type'), h('th', {class: 'opt'}, 'Queue'), h('th', null, 'State'),
          h('th', null, 'Progress'), h('th', {class: 'num opt'}, 'Attempts'), h('th', {class: 'opt'}, 'Created'))),
        body)),
      h('div', {class: 'pager'}, pageInfo, newerButton, olderButton)));

  stateSelect.addEventListener('change', apply);
  // Typing in the text box filters after a short pause; Enter filters at once.
  let typing = null;
  textInput.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(apply, 400);
  });

  /** Bulk actions follow the filters: they cannot filter by text, and each only applies to some states. */
  function updateBulk() {
    const text = filters.text.trim() !== '';
    cancelButton.disabled = text || FINISHED.includes(filters.state);
    retryButton.disabled = text || (filters.state !== '' && !['failed', 'cancelled'].includes(filters.state));
    const why = text ? 'Clear the text filter first: bulk actions filter by state, type and queue only.' : '';
    cancelButton.title = why || (cancelButton.disabled ? 'Finished jobs cannot be cancelled.' : '');
    retryButton.title = why || (retryButton.disabled ? 'Only failed and cancelled jobs can be retried.' : '');
  }

  /** Asks the API what the action would do (dry run), confirms with that count, then does it. */
  async function bulk(kind) {
    const filter = {};
    if (filters.type) filter.types = [filters.type];
    if (filters.queue) filter.queues = [filters.queue];
    if (filters.state) filter.states = [filters.state];
    // No filter means every job: the API needs that said explicitly.
    const body = Object.keys(filter).length ? filter : {all: true};
    const verb = kind === 'cancel' ? 'cancel' : 'retry';
    let count;
    try {
      const dry = await post('/jobs/' + kind, {...body, dry_run: true});
      count = kind === 'cancel' ? dry.body.cancelled + dry.body.pending_on_worker : dry.body.retried;
    } catch (e) {
      bulkResult.replaceChildren(errorMessage('Could not count the jobs to ' + verb, e));
      return;
    }
    if (count === 0) {
      bulkResult.replaceChildren(message('ok', `No job matching these filters can be ${kind === 'cancel' ? 'cancelled' : 'retried'}.`));
      return;
    }
    const jobs = `${fmtNumber(count)} job${count === 1 ? '' : 's'}`;
    const scope = Object.keys(filter).length ? 'matching these filters' : 'in every queue (no filter is set)';
    const yes = await confirm(kind === 'cancel' ? 'Cancel matching jobs?' : 'Retry matching jobs?',
      kind === 'cancel'
        ? `${jobs} ${scope} will be cancelled: waiting ones at once, running ones by their workers.`
        : `${jobs} ${scope} will be queued again, each with a full set of attempts.`,
      `${kind === 'cancel' ? 'Cancel' : 'Retry'} ${jobs}`);
    if (!yes) return;
    try {
      const r = await post('/jobs/' + kind, body);
      bulkResult.replaceChildren(message('ok', h('span', {class: 'code'}, r.status), kind === 'cancel'
        ? `Cancelled ${fmtNumber(r.body.cancelled)}; ${fmtNumber(r.body.pending_on_worker)} running job(s) asked to stop.`
        : `Queued again: ${fmtNumber(r.body.retried)}.`));
    } catch (e) {
      bulkResult.replaceChildren(errorMessage(kind === 'cancel' ? 'Cancel failed' : 'Retry failed', e));
    }
    load();
  }

  function apply() {
    filters.state = stateSelect.value;
    filters.type = typeInput.value.trim();
    filters.queue = queueInput.value.trim();
    filters.text = textInput.value;
    updateBulk();
    // Keep the filters in the address (bookmarkable) without re-rendering the page.
    history.replaceState(null, '', '#/jobs' + query(filters));
    older.length = 0;
    go(null);
  }

  function go(to) {
    cursor = to;
    load();
  }

  // Events that arrive while a page loads may be newer than what the page read: they are kept here
  // (the latest per job) and applied to the new rows.
  const pending = new Map();

  const load = loader('jobs', error, () => {
    pending.clear();
    // "scheduled" is not a state of its own: queued jobs not due yet.
    const asked = filters.state === 'scheduled' ? {...filters, state: 'queued', scheduled: 'true'} : filters;
    return get('/jobs' + query({...asked, limit: PAGE_SIZE, cursor}));
  }, page => {
    rows.clear();
    nextCursor = page.next_cursor;
    body.replaceChildren(...page.jobs.map(row));
    for (const [id, e] of pending) {
      if (rows.has(id)) (e.kind === 'progress' ? onProgress : onState)(e);
    }
    if (!page.jobs.length) body.append(h('tr', null, h('td', {class: 'empty', colspan: 7}, 'No jobs match.')));
    newerButton.disabled = !cursor;
    olderButton.disabled = !nextCursor;
    pageInfo.textContent = `page ${older.length + 1}` + (page.jobs.length ? ` · ${page.jobs.length} jobs` : '');
  });

  function row(job) {
    const tr = h('tr', {dataset: {job: job.id, state: job.state}},
      // On a phone only the id's last characters show (enough to tell rows apart).
      h('td', null, h('a', {class: 'mono', href: '#/jobs/' + job.id, title: job.id},
        h('span', {class: 'opt'}, job.id.slice(0, 8) + '…'), job.id.slice(-4))),
      h('td', null, job.type),
      h('td', {class: 'opt'}, job.queue),
      h('td', {class: 'state'}, stateBadge(job.state, job.scheduled)),
      h('td', {class: 'progress-cell'}),
      h('td', {class: 'num opt attempts'}, `${job.attempts}/${job.max_attempts}`),
      h('td', {class: 'opt'}, timeAgo(job.created_at)));
    rows.set(job.id, {tr, job});
    showProgress(tr, job.state, job.progress?.percent);
    return tr;
  }

  /** Running jobs get a bar; a succeeded one a full green bar; others none. */
  function showProgress(tr, state, percent) {
    const cell = tr.querySelector('.progress-cell');
    if (state === 'running' || state === 'succeeded') {
      let bar = cell.querySelector('.progress');
      if (!bar) cell.replaceChildren(bar = progressBar(percent));
      setProgress(bar, state === 'succeeded' ? 100 : percent, state === 'succeeded');
    } else {
      cell.replaceChildren();
    }
  }

  // ---- live updates

  const reloadFirstPage = throttle(() => {
    if (!cursor) load();
  }, 2000);

  function matches(e) {
    return (!filters.type || filters.type === e.type) && (!filters.queue || filters.queue === e.queue)
      && (!filters.state || filters.state === e.state);
  }

  function onState(e) {
    const r = rows.get(e.job_id);
    if (!r) return false;
    const percent = e.state === 'running' && r.job.state !== 'running' ? null : r.job.progress?.percent;
    r.job = {...r.job, state: e.state, attempts: e.attempts, scheduled: false, progress: percent == null ? null : {percent}};
    r.tr.dataset.state = e.state;
    r.tr.querySelector('.state').replaceChildren(stateBadge(e.state, false));
    r.tr.querySelector('.attempts').textContent = `${e.attempts}/${r.job.max_attempts}`;
    showProgress(r.tr, e.state, percent);
    return true;
  }

  /** Progress comes only from running jobs: a row still showing an earlier state catches up. */
  function onProgress(e) {
    const r = rows.get(e.job_id);
    if (!r) return;
    if (r.job.state !== 'running') onState({...e, state: 'running'});
    r.job.progress = {percent: e.progress, message: e.message};
    showProgress(r.tr, 'running', e.progress);
  }

  const stops = [
    events.on('state', e => {
      pending.set(e.job_id, {...e, kind: 'state'});
      if (!onState(e) && !cursor && !FINISHED.includes(e.state) && matches(e)) reloadFirstPage();
    }),
    events.on('progress', e => {
      const last = pending.get(e.job_id);
      // A progress event never replaces a pending final state.
      if (!last || last.state === 'running') pending.set(e.job_id, {...e, kind: 'progress'});
      onProgress(e);
    }),
    events.on('snapshot', () => load()),
  ];

  // Suggestions for the type and queue boxes.
  jobTypes().then(t => typeList.replaceChildren(...t.types.map(x => h('option', {value: x.name})))).catch(() => {});
  get('/queues').then(q => queueList.replaceChildren(...q.queues.map(x => h('option', {value: x.name})))).catch(() => {});
  updateBulk();
  load();

  return () => {
    stops.forEach(stop => stop());
    reloadFirstPage.cancel();
    clearTimeout(typing);
  };
}

function single(v) {
  return Array.isArray(v) ? v[0] : v || '';
}
