// The dashboard's live updates, on the shared browser client (/client/pgjobs.js): one WebSocket (/ws)
// for every page, falling back to the Server-Sent Events stream (/events) when WebSockets do not work.
// Pages subscribe with on(name, fn) and unsubscribe with the function it returns.

import {apiUrl, auth} from './api.js';
// Relative, like every URL of the dashboard: it may be served below an application's path (/jobs/).
import {PgJobsClient, sseParser} from '../client/pgjobs.js';

export {sseParser};

/**
 * The shared stream: events `snapshot`, `state`, `progress`, `resync` and `status` ('connecting',
 * 'live', 'reconnecting'). It reconnects after a drop with a growing delay; after every (re)connection
 * the server sends a `snapshot` first, so pages reload what they show on `snapshot` and `resync`. A
 * refused token opens the token dialog, and the stream goes on with the new one.
 */
export function eventStream() {
  const client = new PgJobsClient({
    // The API's root, where the dashboard is served ('/' on pgjobs' own port, '/jobs/' when mounted). Mounted
    // as a servlet there is no WebSocket, and the client falls back to the event stream.
    baseUrl: apiUrl('/'),
    token: () => auth.token(),
    onUnauthorized: () => auth.rejected(),
    // sessionStorage 'pgjobs.transport' = 'sse' forces the fallback (tests, proxies known to break WebSockets).
    transport: sessionStorage.getItem('pgjobs.transport') || 'auto',
  });
  const stream = client.events();
  // Say on the "live" badge which transport carries the updates (tests read data-transport too).
  stream.on('status', s => {
    const live = document.getElementById('live');
    if (!live || s !== 'live') return;
    live.dataset.transport = client.transport;
    live.title = client.transport === 'websocket'
      ? 'Live updates over the WebSocket /ws'
      : 'Live updates over Server-Sent Events (/events): WebSockets did not work';
  });
  return stream;
}
