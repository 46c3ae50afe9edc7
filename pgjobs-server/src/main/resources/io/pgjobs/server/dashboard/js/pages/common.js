// What several pages share: a loader that shows its errors in place, and the list of job types.

import {get} from '../api.js';
import {errorMessage} from '../dom.js';

/**
 * Wraps an async loader so that (1) only the newest call's result is applied, when an older, slower
 * response arrives late, and (2) a failure is shown in `errorSlot` (and cleared by the next success)
 * instead of becoming an unhandled rejection. `what` names the data in the message.
 */
export function loader(what, errorSlot, load, apply) {
  let seq = 0;
  return async function run() {
    const mine = ++seq;
    try {
      const data = await load();
      if (mine !== seq) return;
      errorSlot.replaceChildren();
      apply(data);
    } catch (e) {
      if (mine !== seq) return;
      errorSlot.replaceChildren(errorMessage('Cannot load ' + what, e));
    }
  };
}

/** Runs fn every `ms` until the returned function is called. */
export function every(ms, fn) {
  const id = setInterval(fn, ms);
  return () => clearInterval(id);
}

let typesCache = null;

/** GET /job-types, fetched once per page load. */
export function jobTypes() {
  if (!typesCache) {
    typesCache = get('/job-types').catch(e => {
      typesCache = null;
      throw e;
    });
  }
  return typesCache;
}
