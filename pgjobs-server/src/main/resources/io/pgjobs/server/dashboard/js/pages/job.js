// Job detail: payload, output, every attempt with its error and stack head, progress (live),
// timestamps and worker; actions cancel, retry and (for a failed job) requeue as a new job, each
// confirmed first and its result shown, including the API's 202 "pending on worker".

import {get, post} from '../api.js';
import {h, fill, stateBadge, progressBar, setProgress, prettyJson, fmtTime, fmtDuration, timeAgo, message, errorMessage, shortId} from '../dom.js';
import {loader, every} from './common.js';

/** Why a waiting job has not started, in words (the API's waiting_for values of a job). */
const WHY = {
  at_global_limit: 'at global limit',
  rate_limited: 'rate limited',
  partition_busy: 'partition busy',
  partition_rate_limited: 'partition rate limited',
};

export default function jobPage(root, {params: [id], events, navigate, confirm, flash}) {
  let job = null;
  let alive = true; // false once the page is left (an action may end after that)
  const result = h('div', {id: 'action-result'}, flash ? message(flash.kind, flash.text) : null);
  const error = h('div');
  const title = h('h1', null, 'Job');
  const badge = h('span', {id: 'job-state'});
  const actions = h('div', {class: 'actions'});
  const bar = progressBar(null, true);
  bar.id = 'job-progress';
  const progressMessage = h('div', {class: 'progress-message', id: 'job-progress-message'});
  const facts = h('dl', {class: 'facts', id: 'job-facts'});
  const payload = h('pre', {class: 'json', id: 'job-payload'});
  const output = h('pre', {class: 'json', id: 'job-output'});
  const attempts = h('div', {id: 'job-attempts'});
  // A job of a graph (POST /graphs): the jobs it waits or waited for, with how each ended.
  const parents = h('div', {id: 'job-parents'});
  const parentsPanel = h('section', {class: 'panel', hidden: true}, h('h2', null, 'Waits for'), parents);

  root.append(
    h('div', {class: 'job-head'}, title, badge, h('span', {class: 'mono muted', title: id}, id), actions),
    result, error,
    h('div', {class: 'grid2'},
      h('div', {class: 'stack'},
        h('section', {class: 'panel'}, h('h2', null, 'Progress'), bar, progressMessage),
        h('section', {class: 'panel'}, h('h2', null, 'Attempts'), attempts),
        h('section', {class: 'panel'}, h('h2', null, 'Payload'), payload),
        h('section', {class: 'panel'}, h('h2', null, 'Output'), output)),
      h('div', {class: 'stack'},
        h('section', {class: 'panel'}, h('h2', null, 'Details'), facts),
        parentsPanel)));

  function render(j) {
    job = j;
    root.dataset.state = j.state;
    title.textContent = j.type;
    badge.replaceChildren(stateBadge(j.state, j.scheduled));
    renderProgress(j.progress?.percent, j.progress?.message);
    renderActions();
    payload.textContent = prettyJson(j.payload);
    output.textContent = j.output == null ? (j.state === 'succeeded' ? 'null (no output)' : '–') : prettyJson(j.output);

    const fact = (label, ...value) => [h('dt', null, label), h('dd', null, ...value)];
    const when = iso => iso ? [fmtTime(iso), ' ', h('span', {class: 'muted'}, '(', timeAgo(iso), ')')] : '–';
    fill(facts,
      fact('State', stateBadge(j.state, j.scheduled), j.cancel_requested && j.state === 'running' ? h('span', {class: 'muted'}, ' cancellation requested') : null),
      fact('Queue', h('a', {href: '#/jobs?queue=' + encodeURIComponent(j.queue)}, j.queue)),
      // Flow control: the partition its queue's limits count it under, and the limit that holds it back.
      j.partition != null ? fact('Partition', h('span', {class: 'mono', id: 'job-partition'}, j.partition === '' ? '(none)' : j.partition)) : null,
      j.waiting_for ? fact('Waiting', h('span', {class: 'badge limit-why', id: 'job-waiting-for', dataset: {why: j.waiting_for}},
        'waiting: ' + (WHY[j.waiting_for] || j.waiting_for))) : null,
      fact('Priority', String(j.priority)),
      fact('Attempts', `${j.attempts} of ${j.max_attempts}` + (j.snoozes ? ` · snoozed ${j.snoozes}×` : '')),
      fact('Created', when(j.created_at)),
      fact(j.state === 'queued' || j.state === 'retrying' ? 'Runs at' : 'Run at', when(j.run_at)),
      fact('Started', when(j.attempted_at)),
      fact('Finished', when(j.finished_at)),
      fact('Worker', j.locked_by ? h('span', {class: 'mono', id: 'job-worker'}, j.locked_by) : '–'),
      j.heartbeat_at ? fact('Heartbeat', when(j.heartbeat_at)) : null,
      fact('Timeout', j.timeout_ms == null ? 'the type\'s default' : fmtDuration(j.timeout_ms)),
      fact('Context', j.context ?? '–'),
      j.idempotency_key ? fact('Idempotency key', h('span', {class: 'mono'}, j.idempotency_key)) : null,
      // Child jobs (ctx.enqueue): links both ways.
      j.parent_id ? fact('Parent', h('a', {class: 'mono', id: 'job-parent', href: '#/jobs/' + j.parent_id}, j.parent_id)) : null,
      j.children?.length ? fact('Children', h('span', {id: 'job-children'},
        j.children.map((c, i) => [i ? ', ' : '', h('a', {class: 'mono', href: '#/jobs/' + c}, c)]))) : null);

    renderAttempts(j);
    loadParents();
  }

  /** The parents, if it has any: each a link with its type, how it ended, and what its failure does here. */
  async function loadParents() {
    let list;
    try {
      list = (await get('/jobs/' + id + '/parents')).parents;
    } catch {
      return; // the job's own load shows what is wrong
    }
    if (!alive) return;
    parentsPanel.hidden = list.length === 0;
    parents.replaceChildren(...list.map(p => h('div', {class: 'parent', dataset: {id: p.id}},
      p.state ? stateBadge(p.state) : h('span', {class: 'badge s-blocked', dataset: {state: 'waiting'}}, 'not ended'), ' ',
      h('a', {class: 'mono', href: '#/jobs/' + p.id}, shortId(p.id)), ' ', h('span', null, p.type), ' ',
      h('span', {class: 'muted'}, p.on_failure === 'run' ? '(runs anyway if it fails)'
        : p.on_failure === 'only' ? '(runs only if it fails)' : '(cancelled if it fails)'))));
  }

  function renderProgress(percent, text) {
    const done = job?.state === 'succeeded';
    setProgress(bar, done ? 100 : percent, done);
    progressMessage.textContent = text || (job?.state === 'queued' ? 'waiting to run'
      : job?.state === 'blocked' ? 'waiting for the jobs it depends on' : '');
  }

  /** Every failed attempt (oldest first) with its error, then the running or last successful one. */
  function renderAttempts(j) {
    const items = j.errors.map(e => h('div', {class: 'attempt', dataset: {attempt: e.attempt}},
      h('div', {class: 'what'},
        h('b', null, `Attempt ${e.attempt}`), h('span', {class: 'badge s-failed'}, e.kind),
        h('span', {class: 'muted'}, fmtTime(e.at)), e.worker ? h('span', {class: 'muted mono'}, e.worker) : null),
      h('div', {class: 'err'}, e.error_class ? h('code', null, e.error_class + ': ') : null, e.message ?? '(no message)'),
      e.cause ? h('div', {class: 'err cause'}, e.cause.split('\n').map(c => [h('span', {class: 'muted'}, 'caused by '), c, h('br')])) : null,
      e.stack_head ? h('details', null, h('summary', null, 'stack'), h('pre', null, e.stack_head)) : null));
    const failed = new Set(j.errors.map(e => e.attempt));
    if (j.attempts > 0 && !failed.has(j.attempts) && (j.state === 'running' || j.state === 'succeeded')) {
      items.push(h('div', {class: 'attempt', dataset: {attempt: j.attempts}},
        h('div', {class: 'what'}, h('b', null, `Attempt ${j.attempts}`), stateBadge(j.state),
          h('span', {class: 'muted'}, j.state === 'running' ? 'since ' + fmtTime(j.attempted_at) : fmtTime(j.finished_at)),
          j.locked_by ? h('span', {class: 'muted mono'}, j.locked_by) : null)));
    }
    attempts.replaceChildren(...(items.length ? items : [h('p', {class: 'muted'}, 'Not run yet.')]));
  }

  // ---- actions

  function renderActions() {
    const s = job.state;
    fill(actions,
      ['queued', 'retrying', 'running', 'blocked'].includes(s)
        ? h('button', {type: 'button', class: 'danger', id: 'action-cancel', onclick: cancel}, 'Cancel') : null,
      ['failed', 'cancelled'].includes(s)
        ? h('button', {type: 'button', id: 'action-retry', onclick: retry}, 'Retry') : null,
      s === 'failed'
        ? h('button', {type: 'button', id: 'action-requeue', onclick: requeue}, 'Requeue as new job') : null);
  }

  /** Runs an action after confirmation and shows what the API answered. */
  async function act(question, text, yes, run) {
    if (!await confirm(question, text, yes)) return;
    for (const b of actions.querySelectorAll('button')) b.disabled = true;
    let shown;
    try {
      shown = await run();
    } catch (e) {
      shown = errorMessage(null, e);
    }
    if (!alive) return;
    fill(result, shown);
    load();
  }

  function cancel() {
    act('Cancel this job?', job.state === 'running'
      ? `Job ${shortId(id)} is running: its worker will be asked to stop it.`
      : `Job ${shortId(id)} has not started: it is cancelled at once.`, 'Cancel job', async () => {
      const r = await post(`/jobs/${id}/cancel`);
      return r.status === 202
        ? message('info', h('span', {class: 'code'}, '202'), 'Cancellation pending on worker: the job is running and its worker will stop it.')
        : message('ok', h('span', {class: 'code'}, r.status), 'Cancelled.');
    });
  }

  function retry() {
    act('Retry this job?', `Job ${shortId(id)} is queued again with a full set of attempts (${job.max_attempts}); its errors are kept.`, 'Retry', async () => {
      const r = await post(`/jobs/${id}/retry`);
      return message('ok', h('span', {class: 'code'}, r.status), 'Queued again.');
    });
  }

  function requeue() {
    act('Requeue as a new job?', `A new ${job.type} job with the same payload, queue and priority is enqueued; this failed job stays in the dead letters.`, 'Requeue', async () => {
      const r = await post('/jobs', {type: job.type, payload: job.payload, queue: job.queue, priority: job.priority,
        max_attempts: job.max_attempts, ...(job.context != null ? {context: job.context} : {})});
      navigate('/jobs/' + r.body.id, {kind: 'ok', text: `${r.status}: requeued as this new job; the failed job ${shortId(id)} stays in the dead letters.`});
      return null;
    });
  }

  // ---- loading and live updates

  const load = loader('the job', error, () => get('/jobs/' + id), render);
  load();
  const stops = [
    events.on('state', e => {
      if (e.job_id === id) load();
    }),
    events.on('progress', e => {
      if (e.job_id !== id || !job) return;
      job.progress = {percent: e.progress, message: e.message};
      renderProgress(e.progress, e.message);
    }),
    events.on('snapshot', () => load()),
    // Heartbeats and ages change without events while a job runs, and why a job waits changes as
    // other jobs of its queue start and finish.
    every(10000, () => {
      if (job && (job.state === 'running' || job.waiting_for)) load();
    }),
  ];
  return () => {
    alive = false;
    stops.forEach(stop => stop());
  };
}
