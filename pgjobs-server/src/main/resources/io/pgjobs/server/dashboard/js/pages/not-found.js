// Not found: an address the dashboard has no page for (an unknown route, a malformed job id). Says so
// instead of showing another page, and offers the way back.

import {h} from '../dom.js';

const JOB_PATH = /^\/jobs\/([^/]+)$/;

export default function notFoundPage(root, {path}) {
  const job = path.match(JOB_PATH);
  root.append(h('section', {class: 'panel not-found', id: 'not-found'},
    h('h1', null, 'Not found'),
    job
      ? h('p', null, `"${decodeURIComponent(job[1])}" is not a job id: a job id is a UUID like 0190c1e2-7a4b-7c3d-8e9f-0a1b2c3d4e5f.`)
      : h('p', null, `The dashboard has no page at #${path}.`),
    h('p', null, h('a', {href: '#/'}, 'Overview'), ' · ', h('a', {href: '#/jobs'}, 'Jobs'))));
}
