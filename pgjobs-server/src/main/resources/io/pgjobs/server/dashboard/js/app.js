// The dashboard's entry point: hash routing between the pages, the shared live event stream, the
// confirmation dialog and messages that survive a page change.

import {auth} from './api.js';
import {eventStream} from './events.js';
import {parseQuery, tickTimes} from './dom.js';
import overview from './pages/overview.js';
import jobs from './pages/jobs.js';
import job from './pages/job.js';
import deadLetters from './pages/dead-letters.js';
import enqueue from './pages/enqueue.js';
import queues from './pages/queues.js';
import recurring from './pages/recurring.js';
import notFound from './pages/not-found.js';

const ROUTES = [
  {pattern: /^\/?$/, page: overview, nav: 'overview', title: 'Overview'},
  {pattern: /^\/jobs\/([0-9a-fA-F-]{36})$/, page: job, nav: 'jobs', title: 'Job'},
  {pattern: /^\/jobs\/?$/, page: jobs, nav: 'jobs', title: 'Jobs'},
  {pattern: /^\/dead-letters\/?$/, page: deadLetters, nav: 'dead-letters', title: 'Dead letters'},
  {pattern: /^\/enqueue\/?$/, page: enqueue, nav: 'enqueue', title: 'Enqueue'},
  {pattern: /^\/queues\/?$/, page: queues, nav: 'queues', title: 'Queues'},
  {pattern: /^\/recurring\/?$/, page: recurring, nav: 'recurring', title: 'Recurring'},
];

const main = document.getElementById('main');
const events = eventStream();
let unmount = null;
let flash = null;

/** Goes to a dashboard path ("/jobs/…"), optionally with a message for the next page to show. */
function navigate(path, message) {
  flash = message || null;
  if (location.hash === '#' + path) route();
  else location.hash = path;
}

/** Asks for confirmation in the page's dialog; resolves to true for yes. */
function confirmAction(title, text, yes = 'Yes') {
  const dialog = document.getElementById('confirm-dialog');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-message').textContent = text;
  document.getElementById('confirm-yes').textContent = yes;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise(resolve => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), {once: true}));
}

function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, search = ''] = hash.split('?');
  const found = ROUTES.find(r => r.pattern.test(path))
    || {pattern: /^/, page: notFound, nav: 'not-found', title: 'Not found'};
  const match = path.match(found.pattern) || [];
  if (unmount) {
    try {
      unmount();
    } catch {
      // a page that fails to clean up must not keep the next one from showing
    }
  }
  main.replaceChildren();
  main.dataset.page = found.nav;
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.page === found.nav);
    if (a.dataset.page === found.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = found.title + ' · pgjobs';
  const message = flash;
  flash = null;
  unmount = found.page(main, {path, params: match.slice(1), query: parseQuery(search), events, navigate, confirm: confirmAction, flash: message}) || null;
}

function start() {
  const live = document.getElementById('live');
  events.on('status', s => {
    live.dataset.status = s;
    live.textContent = s === 'live' ? 'live' : s === 'reconnecting' ? 'reconnecting…' : 'connecting…';
  });
  const signOut = document.getElementById('sign-out');
  signOut.hidden = !auth.token();
  signOut.addEventListener('click', () => auth.forget());
  window.addEventListener('hashchange', route);
  window.addEventListener('pagehide', () => events.stop());
  setInterval(() => tickTimes(main), 1000);
  events.start();
  route();
}

start();
