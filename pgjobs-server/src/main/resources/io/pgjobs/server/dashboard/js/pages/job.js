// Job detail: payload, output, every attempt with its error and stack head, progress (live),
// timestamps and worker; actions cancel, retry and (for a failed job) requeue as a new job, each
// confirmed first and its result shown, including the API's 202 "pending on worker".

import {get, post} from '../api.js';
import {h, fill, stateBadge, progressBar, setProgress, prettyJson, fmtTime, fmtDuration, timeAgo, message, errorMessage, shortId, throttle} from '../dom.js';
import {loader, every} from './common.js';

/** Why a waiting job has not started, in words (the API's waiting_for values of a job). */
const WHY = {
  at_global_limit: 'at global limit',
  rate_limited: 'rate limited',
  partition_busy: 'partition busy',
  partition_rate_limited: 'partition rate limited',
};

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes and children. */
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v != null) el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c != null) el.append(c);
  }
  return el;
}

const NODE_W = 150;
const NODE_H = 42;
const GAP_X = 56;
const GAP_Y = 14;

/**
 * A job's dependency graph drawn left to right: each job in the column of its longest chain of parents
 * (roots on the left), in the order the API listed them within a column; edges from parent to child,
 * dashed when the child runs anyway if the parent fails, dotted when it runs only then. Each job links to
 * its page; its border has its state's colour; the page's own job is drawn bold.
 */
export function drawGraph(graph, current) {
  const parentsOf = new Map(graph.jobs.map(j => [j.id, []]));
  for (const e of graph.edges) parentsOf.get(e.child)?.push(e.parent);
  const depth = new Map();
  const depthOf = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0; // not in a graph pgjobs built (they have no cycle); drawn anyway
    seen.add(id);
    const ps = (parentsOf.get(id) || []).filter(p => parentsOf.has(p));
    const d = ps.length ? 1 + Math.max(...ps.map(p => depthOf(p, seen))) : 0;
    depth.set(id, d);
    return d;
  };
  const columns = [];
  const at = new Map();
  for (const j of graph.jobs) {
    const d = depthOf(j.id);
    (columns[d] ||= []).push(j);
  }
  columns.forEach((col, x) => col.forEach((j, y) => at.set(j.id, {
    x: x * (NODE_W + GAP_X) + 4, y: y * (NODE_H + GAP_Y) + 4})));
  const width = columns.length * (NODE_W + GAP_X) - GAP_X + 8;
  const height = Math.max(...columns.map(c => c.length)) * (NODE_H + GAP_Y) - GAP_Y + 8;
  const edges = graph.edges.filter(e => at.has(e.parent) && at.has(e.child)).map(e => {
    const a = at.get(e.parent);
    const b = at.get(e.child);
    const x1 = a.x + NODE_W;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x - 3;
    const y2 = b.y + NODE_H / 2;
    const mid = (x1 + x2) / 2;
    return svg('path', {class: 'gedge gedge-' + e.on_failure, d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
      'marker-end': 'url(#garrow)', 'data-parent': e.parent, 'data-child': e.child});
  });
  const nodes = graph.jobs.map(j => {
    const p = at.get(j.id);
    const text = j.name ?? j.type;
    const label = text.length > 20 ? text.slice(0, 19) + '…' : text;
    return svg('a', {href: '#/jobs/' + j.id},
      svg('g', {class: `gnode s-${j.state}` + (j.id === current ? ' current' : ''), 'data-id': j.id, 'data-state': j.state,
        transform: `translate(${p.x},${p.y})`},
        svg('title', null, `${j.name ? j.name + ': ' : ''}${j.type} ${j.id} (${j.state}, queue ${j.queue})`),
        svg('rect', {width: NODE_W, height: NODE_H, rx: 6}),
        svg('text', {x: 8, y: 17, class: 'gtype'}, label),
        // The id's end: ids of one graph share their start (UUIDv7: the time they were made).
        svg('text', {x: 8, y: 34, class: 'gstate'}, `${j.state} · …${j.id.slice(-6)}`)));
  });
  return svg('svg', {id: 'job-graph', class: 'dep-graph', width, height, viewBox: `0 0 ${width} ${height}`,
      role: 'img', 'aria-label': `dependency graph of ${graph.jobs.length} jobs`},
    svg('defs', null, svg('marker', {id: 'garrow', viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto'},
      svg('path', {d: 'M0,0 L8,4 L0,8 z', class: 'garrow'}))),
    edges, nodes);
}

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
  // The whole graph it belongs to, drawn (GET /jobs/{id}/graph), redrawn as its jobs change state.
  const graphNote = h('p', {class: 'muted', id: 'job-graph-note'});
  const graphBox = h('div', {class: 'graph-box'});
  const graphPanel = h('section', {class: 'panel', id: 'job-graph-panel', hidden: true},
    h('h2', null, 'Dependency graph'), graphBox, graphNote);
  let graphIds = new Set();
  // A workflow run (GET /workflows/{id}): its recorded steps, in the order they first ran.
  const stepsBody = h('tbody');
  const stepsPanel = h('section', {class: 'panel', id: 'workflow-steps-panel', hidden: true},
    h('h2', null, 'Workflow steps'),
    h('div', {class: 'table-wrap'}, h('table', {id: 'workflow-steps'},
      h('thead', null, h('tr', null, h('th', null, '#'), h('th', null, 'Step'), h('th', null, 'Kind'),
        h('th', null, 'State'), h('th', null, 'Result or error'), h('th', null, 'Recorded'))),
      stepsBody)));

  root.append(
    h('div', {class: 'job-head'}, title, badge, h('span', {class: 'mono muted', title: id}, id), actions),
    result, error,
    graphPanel,
    stepsPanel,
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
    loadGraph();
    loadSteps();
  }

  /** Shows the recorded steps when the job is a workflow run that has any. */
  async function loadSteps() {
    let run;
    try {
      run = await get('/workflows/' + id);
    } catch {
      return; // the job's own load shows what is wrong
    }
    if (!alive) return;
    stepsPanel.hidden = run.steps.length === 0;
    const text = s => {
      if (s.error) return s.error;
      if (s.result == null) return '–';
      const json = typeof s.result === 'string' ? s.result : JSON.stringify(s.result);
      return json.length > 120 ? json.slice(0, 119) + '…' : json;
    };
    stepsBody.replaceChildren(...run.steps.map(s => h('tr', {dataset: {step: s.name, state: s.state}},
      h('td', null, String(s.seq)), h('td', {class: 'mono'}, s.name), h('td', null, s.kind),
      h('td', null, h('span', {class: 'badge step-' + s.state}, s.state)),
      h('td', {class: 'mono'}, text(s)), h('td', null, fmtTime(s.finished_at)))));
  }

  /** Draws the dependency graph when the job has one (more than itself). */
  async function loadGraph() {
    let graph;
    try {
      graph = await get('/jobs/' + id + '/graph');
    } catch {
      return; // the job's own load shows what is wrong
    }
    if (!alive) return;
    graphIds = new Set(graph.jobs.map(j => j.id));
    graphPanel.hidden = graph.jobs.length < 2;
    if (graphPanel.hidden) return;
    graphBox.replaceChildren(drawGraph(graph, id));
    graphNote.textContent = `${graph.jobs.length} jobs, ${graph.edges.length} dependencies`
      + (graph.truncated ? ' (the first 500 jobs only)' : '')
      + '. Dashed: runs anyway if the parent fails; dotted: runs only if it fails.';
  }
  const graphLater = throttle(() => loadGraph(), 500);

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
      else if (graphIds.has(e.job_id)) graphLater();
    }),
    events.on('progress', e => {
      if (e.job_id !== id || !job) return;
      job.progress = {percent: e.progress, message: e.message};
      renderProgress(e.progress, e.message);
      // A workflow run's recorded step (or compensation) comes as a progress event of its job.
      loadSteps();
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
