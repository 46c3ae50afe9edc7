// pgjobs browser client: start jobs and follow them live. One ES module, no build step, typed with
// JSDoc so editors complete it. Served by every pgjobs server at /client/pgjobs.js.
//
//   import * as pgjobs from '/client/pgjobs.js';
//   const job = await pgjobs.start('summarize_text', {text: '...'}, {token});
//   job.subscribe(s => console.log(s.state, s.progress_percent, s.progress_message, s.output, s.last_error));
//   await job.done;   // the final state, once
//   job.cancel(); job.close();
//   const run = await pgjobs.startWorkflow('fulfil_order', {order: 42});   // or subscribeWorkflow(id, fn)
//   run.subscribe(r => console.log(r.state, r.steps.map(s => s.name + ' ' + s.state)));
//
// Transport: the WebSocket /ws (docs/API.md, "WebSocket /ws"). When the server answers HTTP but a
// WebSocket cannot be opened (a proxy without upgrade support, say), it falls back to the Server-Sent
// Events stream /events. After every reconnection it subscribes again and gets each job whole, so a
// final state reached while the connection was down is never lost.

/** States after which a job does not change on its own. */
export const TERMINAL_STATES = Object.freeze(['succeeded', 'failed', 'cancelled']);

/**
 * What a subscriber gets: the job's state and progress, its output once it succeeded and the
 * message of its last failed attempt.
 *
 * @typedef {Object} JobStatus
 * @property {string} id the job id
 * @property {string} type the job type
 * @property {'queued'|'running'|'retrying'|'succeeded'|'failed'|'cancelled'} state
 * @property {?number} progress_percent last reported progress, 0–100, or null
 * @property {?string} progress_message last reported progress message, or null
 * @property {*} output the handler's result (succeeded jobs), or null
 * @property {?string} last_error the message of the last failed attempt, or null
 * @property {number} attempts attempts started so far
 * @property {boolean} terminal true for succeeded, failed and cancelled
 * @property {Object} job the whole job, as GET /jobs/{id} returns it
 */

/**
 * Client settings.
 *
 * @typedef {Object} ClientOptions
 * @property {string} [baseUrl] the server's address; default: this page's origin
 * @property {string|(() => ?string)} [token] an API token, or a function returning the current one
 * @property {(reason: string) => Promise<void>} [onUnauthorized] called when the server rejects the
 *   token; resolve once a new token is available (the client then tries again). Without it, trackers
 *   get an error and stop. A 401 for a request sent before the token changed is not a rejection of the
 *   new token: the client sends the request again with it, without calling this.
 * @property {'auto'|'websocket'|'sse'} [transport] 'auto' (default): WebSocket, Server-Sent Events
 *   when WebSockets do not work
 */

/**
 * Options of {@link PgJobsClient#start}: the enqueue options of POST /jobs/{type}/dispatch.
 *
 * @typedef {Object} StartOptions
 * @property {string} [token] an API token (sets the default client's token)
 * @property {string} [queue]
 * @property {number|string} [priority]
 * @property {string} [run_at] ISO date-time
 * @property {number} [max_attempts]
 * @property {string} [idempotency_key]
 */

/** A response that was not 2xx; `problem` is the server's application/problem+json document. */
export class PgJobsError extends Error {
  /** @param {number} status @param {?Object} problem */
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.name = 'PgJobsError';
    /** @type {number} */ this.status = status;
    /** @type {Object} */ this.problem = problem || {};
  }
}

/**
 * A Server-Sent Events parser (WHATWG HTML, "event stream interpretation"). Feed it decoded text in
 * chunks of any size; it calls onEvent({event, data, id}) at each blank line that ends an event with
 * data. Lines end in LF, CRLF or CR; a chunk may end in the middle of a line or between CR and LF.
 *
 * @param {(e: {event: string, data: string, id: ?string}) => void} onEvent
 * @returns {(chunk: string) => void}
 */
export function sseParser(onEvent) {
  let buffer = '';
  let event = '';
  let data = [];
  let id = null;

  function line(text) {
    if (text === '') {
      if (data.length) onEvent({event: event || 'message', data: data.join('\n'), id});
      event = '';
      data = [];
      return;
    }
    if (text.startsWith(':')) return; // a comment: the server's keep-alive ping
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
  }

  return function feed(chunk) {
    buffer += chunk;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer[i];
      if (c !== '\n' && c !== '\r') continue;
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk to know.
      if (c === '\r' && i === buffer.length - 1) break;
      line(buffer.slice(start, i));
      if (c === '\r' && buffer[i + 1] === '\n') i++;
      start = i + 1;
    }
    buffer = buffer.slice(start);
  };
}

/** The status a subscriber gets from a whole job (null: the job does not exist). */
function statusOf(job) {
  const errors = job.errors || [];
  return {
    id: job.id,
    type: job.type,
    state: job.state,
    progress_percent: job.progress?.percent ?? null,
    progress_message: job.progress?.message ?? null,
    output: job.output ?? null,
    last_error: errors.length ? errors[errors.length - 1].message : null,
    attempts: job.attempts,
    terminal: TERMINAL_STATES.includes(job.state),
    job,
  };
}

function call(fn, value) {
  try {
    fn(value);
  } catch (e) {
    // A subscriber's error must not break delivery to the others.
    setTimeout(() => { throw e; });
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/** One followed job. Get one from {@link PgJobsClient#start} or {@link PgJobsClient#track}. */
export class JobTracker {
  /** @param {PgJobsClient} client @param {string} id */
  constructor(client, id) {
    /** @type {string} */ this.id = id;
    /** The latest status, or null before the first one arrived. @type {?JobStatus} */
    this.latest = null;
    this._client = client;
    this._subscribers = new Set();
    this._closed = false;
    let resolve, reject;
    /**
     * Resolves once, with the first terminal status (succeeded, failed or cancelled); rejects when
     * the job does not exist or the token is refused.
     * @type {Promise<JobStatus>}
     */
    this.done = new Promise((res, rej) => { resolve = res; reject = rej; });
    this.done.catch(() => {}); // a page that never awaits `done` gets no unhandled rejection
    this._resolve = resolve;
    this._reject = reject;
    this._settled = false;
  }

  /**
   * Calls fn with every new status, at once with the latest one if known. Returns the unsubscribe function.
   * @param {(status: JobStatus) => void} fn
   * @returns {() => void}
   */
  subscribe(fn) {
    this._subscribers.add(fn);
    if (this.latest) call(fn, this.latest);
    return () => this._subscribers.delete(fn);
  }

  /**
   * Asks the server to cancel the job (POST /jobs/{id}/cancel). A running job's handler is asked to
   * stop; the final `cancelled` state then arrives through subscribe() and `done`.
   * @returns {Promise<Object>} the job as the server answered
   */
  async cancel() {
    return (await this._client._request('POST', `/jobs/${encodeURIComponent(this.id)}/cancel`)).body;
  }

  /** Stops following the job; subscribers get nothing more. */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._subscribers.clear();
    this._client._untrack(this);
  }

  /** @param {?Object} job the whole job, or null when it does not exist */
  _update(job) {
    if (this._closed) return;
    if (!job) {
      this._fail(new PgJobsError(404, {detail: `no job with id ${this.id}`}));
      return;
    }
    // A snapshot is always read after the change it reports, but a late message of an older
    // connection must not take a final state back.
    if (this.latest?.terminal && !TERMINAL_STATES.includes(job.state) && job.attempts <= this.latest.attempts) return;
    const status = statusOf(job);
    this.latest = status;
    for (const fn of [...this._subscribers]) call(fn, status);
    if (status.terminal && !this._settled) {
      this._settled = true;
      this._resolve(status);
    }
  }

  _fail(error) {
    if (!this._settled) {
      this._settled = true;
      this._reject(error);
    }
  }
}

/**
 * What a workflow subscriber gets: the run as GET /workflows/{id} returns it, with its recorded steps.
 *
 * @typedef {Object} WorkflowStatus
 * @property {string} id the run's id (its job's)
 * @property {string} workflow the workflow's name
 * @property {'queued'|'running'|'retrying'|'succeeded'|'failed'|'cancelled'} state the run's job's state
 *   (a sleeping or waiting run is queued or retrying, due when it wakes)
 * @property {number} attempts executions started so far
 * @property {*} output the workflow's result once it succeeded, or null
 * @property {Array<{name: string, kind: string, state: string, result: *, error: ?string, seq: number,
 *   finished_at: string}>} steps the recorded steps, in the order they first ran
 * @property {boolean} terminal true for succeeded, failed and cancelled
 * @property {?JobStatus} job the run's job status (progress, last error)
 */

/**
 * One followed workflow run. Get one from {@link PgJobsClient#startWorkflow} or
 * {@link PgJobsClient#trackWorkflow}. It follows the run's job over the client's connection; each
 * event of it (a change of state, a recorded step or compensation) makes it read the run again
 * (GET /workflows/{id}), so subscribers see every step as it is recorded and the final state once.
 */
export class WorkflowTracker {
  /** @param {PgJobsClient} client @param {string} id */
  constructor(client, id) {
    /** @type {string} */ this.id = id;
    /** The latest status, or null before the first one arrived. @type {?WorkflowStatus} */
    this.latest = null;
    this._client = client;
    this._subscribers = new Set();
    this._closed = false;
    this._reading = false;
    this._again = false;
    this._seen = null;
    let resolve, reject;
    /**
     * Resolves once, with the first terminal status; rejects when the run does not exist or the token
     * is refused.
     * @type {Promise<WorkflowStatus>}
     */
    this.done = new Promise((res, rej) => { resolve = res; reject = rej; });
    this.done.catch(() => {});
    this._resolve = resolve;
    this._reject = reject;
    this._settled = false;
    this._job = client.track(id);
    this._job.subscribe(() => this._read());
    this._job.done.catch(e => this._fail(e));
  }

  /**
   * Calls fn with every new status, at once with the latest one if known. Returns the unsubscribe function.
   * @param {(status: WorkflowStatus) => void} fn
   * @returns {() => void}
   */
  subscribe(fn) {
    this._subscribers.add(fn);
    if (this.latest) call(fn, this.latest);
    return () => this._subscribers.delete(fn);
  }

  /**
   * Asks the server to cancel the run with compensation (POST /workflows/{id}/cancel): its done steps
   * are compensated, the last first, and it ends cancelled.
   * @returns {Promise<Object>} the server's answer ({cancel_requested})
   */
  async cancel() {
    return (await this._client._request('POST', `/workflows/${encodeURIComponent(this.id)}/cancel`)).body;
  }

  /**
   * Sends signal `name` with `payload` to the run (POST /workflows/{id}/signals/{name}); the first of a
   * name counts.
   * @param {string} name
   * @param {*} payload
   * @returns {Promise<Object>} the server's answer ({stored})
   */
  async signal(name, payload) {
    const path = `/workflows/${encodeURIComponent(this.id)}/signals/${encodeURIComponent(name)}`;
    return (await this._client._request('POST', path, {payload})).body;
  }

  /** Stops following the run; subscribers get nothing more. */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._subscribers.clear();
    this._job.close();
  }

  /** Reads the run again; events that come meanwhile make one more read after it. */
  async _read() {
    if (this._reading) {
      this._again = true;
      return;
    }
    this._reading = true;
    try {
      do {
        this._again = false;
        const run = (await this._client._request('GET', `/workflows/${encodeURIComponent(this.id)}`)).body;
        this._update(run);
      } while (this._again && !this._closed);
    } catch (e) {
      // Not found or refused: the run's job tracker fails too. Otherwise (the server went away) the
      // job tracker's snapshot after the reconnection reads the run again.
      if (e instanceof PgJobsError && (e.status === 404 || e.status === 401 || e.status === 403)) this._fail(e);
    } finally {
      this._reading = false;
    }
  }

  /** @param {Object} run the run as GET /workflows/{id} answered */
  _update(run) {
    if (this._closed) return;
    const seen = JSON.stringify(run) + '|' + JSON.stringify(this._job.latest?.job ?? null);
    if (seen === this._seen) return;
    this._seen = seen;
    const status = {...run, terminal: TERMINAL_STATES.includes(run.state), job: this._job.latest};
    this.latest = status;
    for (const fn of [...this._subscribers]) call(fn, status);
    if (status.terminal && !this._settled) {
      this._settled = true;
      this._resolve(status);
    }
  }

  _fail(error) {
    if (!this._settled) {
      this._settled = true;
      this._reject(error);
    }
  }
}

/**
 * A live stream of the server's job events (the events of GET /events), over the client's
 * connection. Names: `snapshot`, `state`, `progress`, `resync`, and `status` ('connecting', 'live',
 * 'reconnecting').
 */
export class EventStream {
  constructor(client, filter) {
    this._client = client;
    this.filter = filter;
    this._listeners = new Map();
  }

  /**
   * Subscribes fn to events named `name`; returns the unsubscribe function.
   * @param {'snapshot'|'state'|'progress'|'resync'|'status'|'error'} name
   * @param {(data: *) => void} fn
   * @returns {() => void}
   */
  on(name, fn) {
    if (!this._listeners.has(name)) this._listeners.set(name, new Set());
    this._listeners.get(name).add(fn);
    return () => this._listeners.get(name).delete(fn);
  }

  /** Starts receiving. */
  start() {
    this._client._stream(this);
    return this;
  }

  /** Stops receiving. */
  stop() {
    this._client._unstream(this);
  }

  _emit(name, value) {
    for (const fn of [...(this._listeners.get(name) || [])]) call(fn, value);
  }
}

/**
 * A connection to one pgjobs server, shared by all its trackers and event streams: one WebSocket
 * (or, as the fallback, one Server-Sent Events stream per job and one for the event stream).
 */
export class PgJobsClient {
  /** @param {ClientOptions} [options] */
  constructor(options = {}) {
    this.baseUrl = (options.baseUrl || (typeof location !== 'undefined' ? location.origin : '')).replace(/\/$/, '');
    this.token = options.token ?? null;
    this.onUnauthorized = options.onUnauthorized || null;
    /** 'websocket' or 'sse' once decided. */
    this.transport = options.transport === 'sse' ? 'sse' : 'websocket';
    this._fallback = (options.transport || 'auto') === 'auto';
    this._trackers = new Map(); // id -> Set<JobTracker>
    this._streams = new Set();
    this._ws = null;
    this._wsOpen = false;
    this._running = false;
    // Each start of the connection gets a new generation; a loop of an older one (still closing its
    // socket when the client was started again) ends instead of opening a second connection.
    this._generation = 0;
    this._sse = new Map(); // key -> AbortController
    this._wake = null;
  }

  /** The current token, or null. */
  _token() {
    return typeof this.token === 'function' ? this.token() : this.token;
  }

  _headers(token = this._token()) {
    return token ? {Authorization: 'Bearer ' + token} : {};
  }

  /**
   * After a 401 for a request sent with `sent`: true when the token has changed since (the user entered
   * one while the request was on its way), so the request is simply sent again with the new one instead of
   * asking for yet another token.
   */
  _tokenChangedSince(sent) {
    return (this._token() || null) !== (sent || null);
  }

  /** Sends a JSON request; resolves to {status, body} for 2xx, rejects with PgJobsError otherwise. */
  async _request(method, path, body) {
    for (;;) {
      const sent = this._token();
      const headers = {Accept: 'application/json', ...this._headers(sent)};
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      const res = await fetch(this.baseUrl + path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
      const text = await res.text();
      let json = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = {detail: text.slice(0, 300)};
      }
      if (res.status === 401 && this._tokenChangedSince(sent)) continue;
      if (res.status === 401 && this.onUnauthorized) {
        await this.onUnauthorized(json?.detail || 'the token was not accepted');
        continue;
      }
      if (!res.ok) throw new PgJobsError(res.status, json);
      return {status: res.status, body: json};
    }
  }

  /**
   * Enqueues a job of `type` with `args` (POST /jobs/{type}/dispatch) and follows it.
   * @param {string} type a job type the server knows
   * @param {*} [args] the job's arguments (its payload)
   * @param {StartOptions} [options]
   * @returns {Promise<JobTracker>}
   * @throws {PgJobsError} when the server refuses the job (unknown type, invalid args, bad token)
   */
  async start(type, args = {}, options = {}) {
    const {token, ...enqueue} = options;
    if (token) this.token = token;
    const res = await this._request('POST', `/jobs/${encodeURIComponent(type)}/dispatch`, {args, ...enqueue});
    const tracker = this.track(res.body.id);
    tracker._update(res.body);
    return tracker;
  }

  /**
   * Starts a run of workflow `name` with `input` (POST /workflows/{name}/start) and follows it.
   * @param {string} name a workflow the server knows
   * @param {*} [input] the run's input
   * @param {{token?: string, queue?: string, priority?: number|string, context?: string}} [options]
   * @returns {Promise<WorkflowTracker>}
   * @throws {PgJobsError} when the server refuses the run (unknown workflow, bad input, bad token)
   */
  async startWorkflow(name, input = {}, options = {}) {
    const {token, ...start} = options;
    if (token) this.token = token;
    const res = await this._request('POST', `/workflows/${encodeURIComponent(name)}/start`, {input, ...start});
    const tracker = this.trackWorkflow(res.body.id);
    tracker._update(res.body);
    return tracker;
  }

  /**
   * Follows an existing workflow run: its state and its steps as they are recorded.
   * @param {string} id the run's id
   * @returns {WorkflowTracker}
   */
  trackWorkflow(id) {
    return new WorkflowTracker(this, id);
  }

  /**
   * Follows an existing job.
   * @param {string} id the job id
   * @returns {JobTracker}
   */
  track(id) {
    const tracker = new JobTracker(this, id);
    const known = this._trackers.get(id);
    if (known) {
      known.add(tracker);
      const latest = [...known].find(t => t.latest)?.latest;
      if (latest) tracker._update(latest.job);
    } else {
      this._trackers.set(id, new Set([tracker]));
    }
    if (!known) this._subscribe([id]);
    this._ensure();
    return tracker;
  }

  /**
   * The stream of job events for pages that show many jobs (the dashboard), filtered like GET /events.
   * @param {{types?: string[], queues?: string[]}} [filter]
   * @returns {EventStream}
   */
  events(filter = {}) {
    return new EventStream(this, {types: filter.types || [], queues: filter.queues || []});
  }

  /** Closes the connection and every tracker. */
  close() {
    for (const set of [...this._trackers.values()]) for (const t of [...set]) t.close();
    for (const s of [...this._streams]) s.stop();
    this._shutdown();
  }

  // ------------------------------------------------------------ subscriptions

  _untrack(tracker) {
    const set = this._trackers.get(tracker.id);
    if (!set) return;
    set.delete(tracker);
    if (set.size) return;
    this._trackers.delete(tracker.id);
    if (this.transport === 'websocket') this._send({op: 'unsubscribe', jobs: [tracker.id]});
    else this._sse.get('job:' + tracker.id)?.abort();
    this._idle();
  }

  _stream(stream) {
    // The server keeps one event stream per connection; every EventStream shares it (the dashboard has one).
    this._streams.add(stream);
    if (this.transport === 'websocket') this._send({op: 'events', ...stream.filter});
    else this._sseStream();
    this._ensure();
  }

  _unstream(stream) {
    this._streams.delete(stream);
    if (this._streams.size) return;
    if (this.transport === 'websocket') this._send({op: 'events_off'});
    else this._sse.get('events')?.abort();
    this._idle();
  }

  _subscribe(ids) {
    if (this.transport === 'websocket') this._send({op: 'subscribe', jobs: ids});
    else ids.forEach(id => this._sseJob(id));
  }

  _deliver(id, job) {
    for (const t of [...(this._trackers.get(id) || [])]) t._update(job);
  }

  _status(s) {
    for (const stream of this._streams) stream._emit('status', s);
  }

  _unauthorized(reason) {
    const error = new PgJobsError(401, {detail: reason});
    for (const set of this._trackers.values()) for (const t of set) t._fail(error);
    for (const stream of this._streams) stream._emit('error', error);
  }

  /** Nothing followed any more: close the connection. */
  _idle() {
    if (!this._trackers.size && !this._streams.size) this._shutdown();
  }

  _shutdown() {
    this._running = false;
    this._generation++;
    this._ws?.close(1000, 'done');
    this._ws = null;
    for (const c of this._sse.values()) c.abort();
    this._sse.clear();
    this._wake?.();
  }

  _ensure() {
    if (this._running) return;
    this._running = true;
    this._status('connecting');
    if (this.transport === 'websocket') this._wsLoop(++this._generation);
    else this._sseAll();
  }

  // ------------------------------------------------------------ WebSocket

  _send(message) {
    if (this._ws && this._wsOpen) this._ws.send(JSON.stringify(message));
    // Not open: the message is implied by the subscriptions sent on (re)connection.
  }

  /** Opens the WebSocket and keeps it open, reconnecting with a growing delay (0.5 s to 15 s). */
  async _wsLoop(generation) {
    let delay = 500;
    let failedBeforeOpen = 0;
    const current = () => this._running && this._generation === generation;
    while (current() && this.transport === 'websocket') {
      const outcome = await this._wsOnce();
      if (!current()) return;
      if (outcome.opened) {
        delay = 500;
        failedBeforeOpen = 0;
      } else {
        failedBeforeOpen++;
      }
      if (outcome.code === 4401) {
        if (this._tokenChangedSince(outcome.token)) continue;
        if (!this.onUnauthorized) {
          this._unauthorized(outcome.reason);
          this._shutdown();
          return;
        }
        await this.onUnauthorized(outcome.reason);
        continue;
      }
      if (!outcome.opened && this._fallback && failedBeforeOpen >= 2 && await this._httpWorks()) {
        // HTTP works but WebSockets do not: use Server-Sent Events from now on.
        this.transport = 'sse';
        this._status('reconnecting');
        this._sseAll();
        return;
      }
      this._status('reconnecting');
      await new Promise(resolve => {
        this._wake = resolve;
        setTimeout(resolve, delay * (0.75 + Math.random() / 2));
      });
      delay = Math.min(delay * 2, 15000);
    }
  }

  /** One WebSocket connection; resolves when it closes, with {opened, code, reason, token} (the token sent). */
  _wsOnce() {
    return new Promise(resolve => {
      let opened = false;
      let token = null;
      let ws;
      try {
        ws = new WebSocket(this.baseUrl.replace(/^http/, 'ws') + '/ws');
      } catch {
        resolve({opened: false, code: 0, reason: 'WebSocket unavailable'});
        return;
      }
      this._ws = ws;
      ws.onopen = () => {
        opened = true;
        this._wsOpen = true;
        token = this._token();
        if (token) ws.send(JSON.stringify({op: 'auth', token}));
        // (Re)subscribe everything: the server answers each job with its current state.
        if (this._trackers.size) ws.send(JSON.stringify({op: 'subscribe', jobs: [...this._trackers.keys()]}));
        const stream = [...this._streams][0];
        if (stream) ws.send(JSON.stringify({op: 'events', ...stream.filter}));
        this._status('live');
      };
      ws.onmessage = e => {
        let msg;
        try {
          msg = JSON.parse(e.data);
        } catch {
          return;
        }
        if (msg.type === 'job') this._deliver(msg.id, msg.job);
        else if (msg.type === 'event') for (const s of this._streams) s._emit(msg.event, msg.data);
        else if (msg.type === 'error') console.warn('pgjobs: the server refused a message:', msg.detail);
      };
      ws.onclose = e => {
        if (this._ws === ws) {
          this._ws = null;
          this._wsOpen = false;
        }
        resolve({opened, code: e.code, reason: e.reason, token});
      };
    });
  }

  /** True when the server answers HTTP (so a WebSocket that never opens is the problem). */
  async _httpWorks() {
    try {
      return (await fetch(this.baseUrl + '/health/live', {cache: 'no-store'})).ok;
    } catch {
      return false;
    }
  }

  // ------------------------------------------------------------ Server-Sent Events (fallback)

  _sseAll() {
    for (const id of this._trackers.keys()) this._sseJob(id);
    if (this._streams.size) this._sseStream();
  }

  _sseJob(id) {
    this._sseLoop('job:' + id, '/events?job_id=' + encodeURIComponent(id), async (name, data) => {
      if (name === 'snapshot') this._deliver(id, data?.job ?? null);
      else if (name === 'state' || name === 'progress') {
        // Events carry state and progress only: read the whole job for output and errors.
        try {
          this._deliver(id, (await this._request('GET', '/jobs/' + encodeURIComponent(id))).body);
        } catch (e) {
          if (e.status === 404) this._deliver(id, null);
        }
      }
    }, status => {
      if (status === 404) {
        this._deliver(id, null);
        return true;
      }
      return false;
    });
  }

  _sseStream() {
    const stream = [...this._streams][0];
    const q = new URLSearchParams();
    for (const t of stream.filter.types) q.append('type', t);
    for (const name of stream.filter.queues) q.append('queue', name);
    const qs = q.toString();
    this._sseLoop('events', '/events' + (qs ? '?' + qs : ''), (name, data) => {
      for (const s of this._streams) s._emit(name, data);
    }, () => false);
  }

  /** Reads one SSE stream (with fetch, so the token goes in a header) until aborted, reconnecting. */
  async _sseLoop(key, path, onEvent, finalStatus) {
    this._sse.get(key)?.abort();
    const controller = new AbortController();
    this._sse.set(key, controller);
    let delay = 500;
    while (!controller.signal.aborted) {
      try {
        const sent = this._token();
        const res = await fetch(this.baseUrl + path, {
          headers: {Accept: 'text/event-stream', ...this._headers(sent)},
          signal: controller.signal,
          cache: 'no-store',
        });
        if (res.status === 401 && this._tokenChangedSince(sent)) continue;
        if (res.status === 401) {
          const problem = await res.json().catch(() => ({}));
          if (!this.onUnauthorized) {
            this._unauthorized(problem.detail || 'the token was not accepted');
            return;
          }
          await this.onUnauthorized(problem.detail || 'the token was not accepted');
          continue;
        }
        if (finalStatus(res.status)) return;
        if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
        this._status('live');
        delay = 500;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        const feed = sseParser(e => {
          let value = null;
          try {
            value = e.data ? JSON.parse(e.data) : null;
          } catch {
            return; // not JSON: not one of ours
          }
          onEvent(e.event, value);
        });
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          feed(value);
        }
      } catch {
        // The connection failed or dropped (or was aborted): try again below unless aborted.
      }
      if (controller.signal.aborted) return;
      this._status('reconnecting');
      await sleep(delay * (0.75 + Math.random() / 2));
      delay = Math.min(delay * 2, 15000);
    }
  }
}

let defaultClient = null;

/**
 * The client the module-level functions use (this page's origin). Give `token` (a string or a
 * function) to set the token it sends.
 * @param {ClientOptions} [options] applied when the client is created; `token` also later
 * @returns {PgJobsClient}
 */
export function client(options = {}) {
  if (!defaultClient) defaultClient = new PgJobsClient(options);
  else if (options.token) defaultClient.token = options.token;
  return defaultClient;
}

/**
 * Enqueues a job and follows it, on the default client.
 * @param {string} type
 * @param {*} [args]
 * @param {StartOptions} [options]
 * @returns {Promise<JobTracker>}
 */
export function start(type, args, options = {}) {
  return client({token: options.token}).start(type, args, options);
}

/**
 * Follows an existing job, on the default client.
 * @param {string} id
 * @param {{token?: string}} [options]
 * @returns {JobTracker}
 */
export function track(id, options = {}) {
  return client({token: options.token}).track(id);
}

/**
 * Follows workflow run `id` on the default client and calls `fn` with its status at every recorded step
 * and state change, the last time with its final state. Returns the tracker (`done`, `cancel()`,
 * `signal()`, `close()`).
 * @param {string} id
 * @param {(status: WorkflowStatus) => void} fn
 * @param {{token?: string}} [options]
 * @returns {WorkflowTracker}
 */
export function subscribeWorkflow(id, fn, options = {}) {
  const tracker = client({token: options.token}).trackWorkflow(id);
  tracker.subscribe(fn);
  return tracker;
}

/**
 * Starts a run of workflow `name` and follows it, on the default client.
 * @param {string} name
 * @param {*} [input]
 * @param {{token?: string, queue?: string, priority?: number|string, context?: string}} [options]
 * @returns {Promise<WorkflowTracker>}
 */
export function startWorkflow(name, input, options = {}) {
  return client({token: options.token}).startWorkflow(name, input, options);
}
