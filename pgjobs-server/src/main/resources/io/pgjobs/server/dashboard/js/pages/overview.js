// Overview: totals per state, the queues (counts per state, oldest ready job, paused), the throughput
// chart of the last hour and the live workers. Counts reload after job events (at most every 2 s).

import {get} from '../api.js';
import {h, STATES, FINISHED, fmtNumber, fmtDuration, timeAgo, throttle, shortId} from '../dom.js';
import {perMinute, renderChart} from '../chart.js';
import {loader, every} from './common.js';

const CARD_STATES = ['queued', 'scheduled', 'running', 'retrying', 'failed', 'cancelled', 'succeeded'];

export default function overview(root, {events}) {
  const cards = h('div', {class: 'cards', id: 'totals'});
  const queuesError = h('div');
  const queuesBody = h('tbody');
  const chart = h('div', {class: 'chart', id: 'throughput-chart'});
  const chartError = h('div');
  const workersError = h('div');
  const workersBody = h('tbody');
  const workersCount = h('span', {class: 'muted'});

  root.append(
    h('h1', null, 'Overview'),
    cards,
    h('section', {class: 'panel', id: 'queues-panel'},
      h('div', {class: 'panel-head'}, h('h2', null, 'Queues'),
        h('a', {class: 'right', href: '#/queues'}, 'Pause or resume…')),
      queuesError,
      h('div', {class: 'table-wrap'}, h('table', {id: 'queues-table'},
        h('thead', null, h('tr', null,
          h('th', null, 'Queue'),
          h('th', {class: 'num'}, 'Queued'),
          h('th', {class: 'num opt'}, 'Scheduled'),
          h('th', {class: 'num'}, 'Running'),
          h('th', {class: 'num opt'}, 'Retrying'),
          h('th', {class: 'num'}, 'Failed'),
          h('th', {class: 'num opt'}, 'Cancelled'),
          h('th', {class: 'num opt'}, 'Succeeded'),
          h('th', {class: 'num'}, 'Oldest ready'))),
        queuesBody))),
    h('div', {class: 'grid2'},
      h('section', {class: 'panel', id: 'throughput'},
        h('div', {class: 'panel-head'}, h('h2', null, 'Throughput'), h('span', {class: 'muted'}, 'jobs finished per minute')),
        chartError, chart),
      h('section', {class: 'panel', id: 'workers-panel'},
        h('div', {class: 'panel-head'}, h('h2', null, 'Workers'), workersCount),
        workersError,
        h('div', {class: 'table-wrap'}, h('table', {id: 'workers-table'},
          h('thead', null, h('tr', null,
            h('th', null, 'Worker'), h('th', null, 'Queues'), h('th', {class: 'num'}, 'Running'), h('th', null, 'Heartbeat'))),
          workersBody)))));

  // ---- queues and totals

  function renderQueues(queues) {
    const asOf = Date.now();
    const totals = Object.fromEntries(CARD_STATES.map(s => [s, 0]));
    for (const q of queues) {
      for (const s of STATES) totals[s] = (totals[s] || 0) + (q.counts[s] || 0);
      totals.scheduled += q.scheduled;
    }
    // "queued" on the cards means due now; scheduled ones are counted apart.
    totals.queued -= totals.scheduled;
    cards.replaceChildren(...CARD_STATES.map(s => h('a', {
      class: 'card ' + s, href: '#/jobs?state=' + s, dataset: {state: s},
    }, h('span', {class: 'n'}, fmtNumber(totals[s])), h('span', {class: 'l'}, s))));

    const cell = (q, state, n, extra) => h('td', {class: 'num ' + (n ? '' : 'zero ') + (extra || ''), dataset: {count: state}},
      n ? h('a', {href: `#/jobs?queue=${encodeURIComponent(q.name)}&state=${state}`}, fmtNumber(n)) : '0');
    queuesBody.replaceChildren(...(queues.length ? queues.map(q => h('tr', {dataset: {queue: q.name}},
      h('td', null, h('a', {href: '#/jobs?queue=' + encodeURIComponent(q.name)}, q.name),
        q.paused ? [' ', h('span', {class: 'badge paused'}, 'paused')] : null),
      cell(q, 'queued', q.counts.queued - q.scheduled),
      cell(q, 'scheduled', q.scheduled, 'opt'),
      cell(q, 'running', q.counts.running),
      cell(q, 'retrying', q.counts.retrying, 'opt'),
      cell(q, 'failed', q.counts.failed),
      cell(q, 'cancelled', q.counts.cancelled, 'opt'),
      cell(q, 'succeeded', q.counts.succeeded, 'opt'),
      h('td', {class: 'num', dataset: {oldest: q.oldest_ready_age_ms ?? '', asOf}},
        q.oldest_ready_age_ms == null ? '–' : fmtDuration(q.oldest_ready_age_ms))))
      : [h('tr', null, h('td', {class: 'empty', colspan: 9}, 'No queues yet: enqueue a job.'))]));
  }

  /** Ages the "oldest ready" cells between reloads. */
  function tickAges() {
    for (const td of queuesBody.querySelectorAll('td[data-oldest]')) {
      if (td.dataset.oldest === '') continue;
      td.textContent = fmtDuration(Number(td.dataset.oldest) + Date.now() - Number(td.dataset.asOf));
    }
  }

  // ---- workers

  function renderWorkers(workers) {
    // What the engine believes: a worker silent past its dead-worker threshold is presumed dead (its jobs
    // were put back in the queue), even while its row is still listed.
    const live = workers.filter(w => w.alive !== false).length;
    const dead = workers.length - live;
    workersCount.textContent = workers.length ? `${live} live` + (dead ? ` · ${dead} presumed dead` : '') : '';
    workersBody.replaceChildren(...(workers.length ? workers.map(w => {
      const capacity = Object.values(w.queues).reduce((a, b) => a + b, 0);
      return h('tr', {dataset: {worker: w.id, alive: String(w.alive !== false)}, class: w.alive === false ? 'dead' : null},
        h('td', {title: `${w.id}\nstarted ${w.started_at}\ntypes: ${w.job_types.join(', ')}`},
          h('div', {class: 'nowrap'}, `${w.host} · pid ${w.pid}`), h('div', {class: 'muted mono nowrap'}, shortId(w.id))),
        h('td', {class: 'wrap'}, Object.entries(w.queues).map(([q, n], i) => [i ? ', ' : '', h('span', null, q, h('span', {class: 'muted'}, ' ×' + n))])),
        h('td', {class: 'num', dataset: {running: w.running_jobs, stuck: w.stuck_lanes}}, `${w.running_jobs} / ${capacity}`,
          // Lanes held by handlers that ignored their timeout, cancellation or shutdown and were let go.
          w.stuck_lanes > 0 ? h('div', {class: 'stuck', title: 'handlers that ignored their stop and were let go; each holds its lane until it returns'},
            `${w.stuck_lanes} stuck`) : null),
        h('td', null, timeAgo(w.last_heartbeat),
          w.alive === false ? h('div', {class: 'stuck', title: 'silent for longer than its dead-worker threshold: its jobs were put back in the queue'},
            'presumed dead') : null));
    }) : [h('tr', null, h('td', {class: 'empty', colspan: 4}, 'No worker is running.'))]));
  }

  // ---- loading

  const loadQueues = loader('queues', queuesError, () => get('/queues'), d => renderQueues(d.queues));
  const loadStats = loader('throughput', chartError, () => get('/stats?window=1h'), d => renderChart(chart, perMinute(d)));
  const loadWorkers = loader('workers', workersError, () => get('/workers'), d => renderWorkers(d.workers));

  const queuesSoon = throttle(loadQueues, 2000);
  const statsSoon = throttle(loadStats, 2000);
  const workersSoon = throttle(loadWorkers, 2000);

  renderChart(chart, perMinute(null));
  loadQueues();
  loadStats();
  loadWorkers();

  const stops = [
    events.on('snapshot', s => {
      if (s && s.queues) renderQueues(s.queues);
      statsSoon();
      workersSoon();
    }),
    events.on('state', e => {
      queuesSoon();
      if (FINISHED.includes(e.state)) statsSoon();
      if (e.state === 'running' || FINISHED.includes(e.state)) workersSoon();
    }),
    every(1000, tickAges),
    every(5000, loadWorkers),
    every(15000, loadQueues),
    every(30000, loadStats),
  ];
  return () => {
    stops.forEach(stop => stop());
    [queuesSoon, statsSoon, workersSoon].forEach(t => t.cancel());
  };
}
