// The live event stream (GET /events, Server-Sent Events), read with fetch() and parsed here, because
// EventSource cannot send the Authorization header. One stream serves every page: pages subscribe with
// on(name, fn) and unsubscribe with the function it returns.

import {apiUrl, auth} from './api.js';

/**
 * A Server-Sent Events parser (WHATWG HTML, "event stream interpretation"). Feed it decoded text in
 * chunks of any size; it calls onEvent({event, data, id}) at each blank line that ends an event with
 * data. Lines end in LF, CRLF or CR; a chunk may end in the middle of a line or between CR and LF.
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

/**
 * The shared stream. Reconnects after a drop with a growing delay (1 s to 15 s); after every
 * (re)connection the server sends a `snapshot` first, so pages reload what they show on `snapshot`
 * and `resync`.
 */
export function eventStream() {
  const listeners = new Map();
  let stopped = false;
  let controller = null;

  function emit(name, value) {
    for (const fn of listeners.get(name) || []) {
      try {
        fn(value);
      } catch (e) {
        // A page's handler must not break the stream for the others.
        setTimeout(() => { throw e; });
      }
    }
  }

  function status(s) {
    emit('status', s);
  }

  async function connect() {
    let delay = 1000;
    while (!stopped) {
      controller = new AbortController();
      try {
        const res = await fetch(apiUrl('/events'), {
          headers: {Accept: 'text/event-stream', ...auth.headers()},
          signal: controller.signal,
          cache: 'no-store',
        });
        if (res.status === 401) {
          status('connecting');
          await auth.rejected();
          continue;
        }
        if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
        status('live');
        delay = 1000;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        const feed = sseParser(e => {
          let value = null;
          try {
            value = e.data ? JSON.parse(e.data) : null;
          } catch {
            return; // not JSON: not one of ours
          }
          emit(e.event, value);
        });
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          feed(value);
        }
      } catch {
        // The connection failed or dropped (or we stopped it): try again below unless stopped.
      }
      if (stopped) return;
      status('reconnecting');
      await new Promise(resolve => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  return {
    start() {
      connect();
      return this;
    },
    stop() {
      stopped = true;
      controller?.abort();
    },
    /** Subscribes fn to events named `name` (snapshot, state, progress, resync, status); returns the unsubscribe function. */
    on(name, fn) {
      if (!listeners.has(name)) listeners.set(name, new Set());
      listeners.get(name).add(fn);
      return () => listeners.get(name).delete(fn);
    },
  };
}
