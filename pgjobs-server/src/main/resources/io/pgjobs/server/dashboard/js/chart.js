// The throughput chart: jobs succeeded and failed per minute over the last hour, as stacked SVG bars.

import {h, svg, fmtNumber} from './dom.js';

const MINUTES = 60;
const W = 640;        // viewBox size; the SVG scales to its container
const H = 170;
const LEFT_MIN = 34;  // room for the y-axis labels; more when the top label is wider ("10,000")
const CHAR_W = 6.2;   // width of a digit or separator of the 10px axis font, in viewBox units, with margin
const BOTTOM = 18;    // room for the x-axis labels
const TOP = 8;

/**
 * Sums GET /stats minutes (one entry per minute, type and queue) into one bucket per minute of the
 * window ending now: [{minute: Date, succeeded, failed}], oldest first, MINUTES long.
 */
export function perMinute(stats, now = Date.now()) {
  const end = Math.floor(now / 60000) * 60000; // start of the current minute
  const buckets = [];
  for (let i = MINUTES - 1; i >= 0; i--) {
    buckets.push({minute: new Date(end - i * 60000), succeeded: 0, failed: 0});
  }
  const first = end - (MINUTES - 1) * 60000;
  for (const m of stats?.minutes || []) {
    const i = Math.round((Date.parse(m.minute) - first) / 60000);
    if (i >= 0 && i < MINUTES) {
      buckets[i].succeeded += m.succeeded;
      buckets[i].failed += m.failed;
    }
  }
  return buckets;
}

/** The smallest "nice" number (1, 2 or 5 times a power of ten) at least n, so grid lines fall on round values. */
function niceCeil(n) {
  if (n <= 4) return 4;
  const p = Math.pow(10, Math.floor(Math.log10(n)));
  for (const m of [1, 2, 5, 10]) {
    if (m * p >= n) return m * p;
  }
  return 10 * p;
}

function hhmm(d) {
  return String(d.getHours()).padStart(2, '0') + ':' + String(d.getMinutes()).padStart(2, '0');
}

/** Renders the buckets into `container` (replacing what it held); totals are also set as data attributes. */
export function renderChart(container, buckets) {
  const succeeded = buckets.reduce((s, b) => s + b.succeeded, 0);
  const failed = buckets.reduce((s, b) => s + b.failed, 0);
  const max = niceCeil(Math.max(...buckets.map(b => b.succeeded + b.failed)));
  const LEFT = Math.max(LEFT_MIN, Math.ceil(8 + CHAR_W * fmtNumber(max).length));
  const plotW = W - LEFT;
  const plotH = H - TOP - BOTTOM;
  const slot = plotW / buckets.length;
  const y = v => TOP + plotH - (v / max) * plotH;

  const grid = [0, max / 2, max].map(v => [
    svg('line', {class: 'grid', x1: LEFT, x2: W, y1: y(v), y2: y(v)}),
    svg('text', {class: 'axis', x: LEFT - 5, y: y(v) + 3, 'text-anchor': 'end'}, fmtNumber(v)),
  ]);
  const bars = buckets.map((b, i) => {
    const x = LEFT + i * slot + slot * 0.12;
    const w = slot * 0.76;
    const okTop = y(b.succeeded);
    const failTop = y(b.succeeded + b.failed);
    return svg('g', {'data-minute': b.minute.toISOString(), 'data-succeeded': b.succeeded, 'data-failed': b.failed},
      svg('title', null, `${hhmm(b.minute)}: ${b.succeeded} succeeded, ${b.failed} failed`),
      // An invisible full-height rectangle so the tooltip works on empty minutes too.
      svg('rect', {x: LEFT + i * slot, y: TOP, width: slot, height: plotH, fill: 'transparent'}),
      b.succeeded ? svg('rect', {class: 'ok', x, y: okTop, width: w, height: TOP + plotH - okTop}) : null,
      b.failed ? svg('rect', {class: 'fail', x, y: failTop, width: w, height: okTop - failTop}) : null);
  });
  const labels = [0, 15, 30, 45, buckets.length - 1].map(i =>
    svg('text', {class: 'axis', x: LEFT + i * slot + slot / 2, y: H - 4, 'text-anchor': i === 0 ? 'start' : i === buckets.length - 1 ? 'end' : 'middle'},
      hhmm(buckets[i].minute)));

  const chart = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': `Last hour: ${succeeded} jobs succeeded and ${failed} failed`}, grid, bars, labels);
  container.dataset.succeeded = String(succeeded);
  container.dataset.failed = String(failed);
  container.replaceChildren(chart,
    h('div', {class: 'legend'},
      h('span', null, h('span', {class: 'sw ok'}), 'succeeded ', h('b', {class: 'total-succeeded'}, fmtNumber(succeeded))),
      h('span', null, h('span', {class: 'sw fail'}), 'failed ', h('b', {class: 'total-failed'}, fmtNumber(failed))),
      h('span', null, 'per minute, last hour')));
}
