// The HTTP API: JSON requests with the bearer token, problem documents as ApiError, and the token prompt.

const TOKEN_KEY = 'pgjobs.token';

/** A response that was not 2xx; `problem` is the RFC 9457 document (detail, errors, state, ...). */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

// ---------------------------------------------------------------- where the API is

/**
 * The API's root: the directory this dashboard's page is served from (one level above js/). That is "/" on
 * pgjobs' own port and "/jobs/" when an application mounts pgjobs under /jobs, so every call is relative to it.
 */
const ROOT = new URL('../', import.meta.url);

/** The URL of an API path such as "/jobs?state=failed", below the API's root. */
export function apiUrl(path) {
  return new URL(path.replace(/^\/+/, ''), ROOT).href;
}

// ---------------------------------------------------------------- token

let asking = null;

export const auth = {
  token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },

  forget() {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  },

  /**
   * Shows the token dialog and resolves once a token is stored. Every request that got 401 while the
   * dialog is open waits for the same answer.
   */
  ask(reason) {
    if (!asking) {
      asking = new Promise(resolve => {
        const dialog = document.getElementById('token-dialog');
        const input = document.getElementById('token-input');
        document.getElementById('token-message').textContent = reason;
        input.value = '';
        const done = event => {
          event.preventDefault();
          const token = input.value.trim();
          if (!token) return;
          sessionStorage.setItem(TOKEN_KEY, token);
          document.getElementById('token-form').removeEventListener('submit', done);
          dialog.close();
          document.getElementById('sign-out').hidden = false;
          asking = null;
          resolve();
        };
        document.getElementById('token-form').addEventListener('submit', done);
        // Escape would close the dialog without a token; the dashboard cannot work without one.
        dialog.oncancel = e => e.preventDefault();
        dialog.showModal();
        input.focus();
      });
    }
    return asking;
  },

  /** Headers every request carries. */
  headers() {
    const token = this.token();
    return token ? {Authorization: 'Bearer ' + token} : {};
  },

  /** Asks for a (new) token after a 401; the message depends on whether one was sent. */
  rejected() {
    return this.ask(this.token()
      ? 'The token was not accepted. Enter a valid token.'
      : 'This server needs a bearer token to show jobs.');
  },
};

// ---------------------------------------------------------------- requests

/**
 * Sends a request; resolves to {status, body, headers} for 2xx and rejects with ApiError otherwise.
 * `body` (any JSON value) is sent as application/json; undefined sends none. A 401 asks for a token and
 * sends the request again.
 */
export async function request(method, path, body, extraHeaders) {
  for (;;) {
    const sent = auth.token();
    const headers = {Accept: 'application/json', ...auth.headers(), ...extraHeaders};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(apiUrl(path), {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
    // A token entered while this request was on its way: send it again with that one, without asking.
    if (res.status === 401 && auth.token() !== sent) continue;
    if (res.status === 401) {
      await auth.rejected();
      continue;
    }
    const text = await res.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = {detail: text.slice(0, 300)};
    }
    if (!res.ok) throw new ApiError(res.status, json);
    return {status: res.status, body: json, headers: res.headers};
  }
}

/** GET a JSON document. */
export async function get(path) {
  return (await request('GET', path)).body;
}

/** POST; resolves to {status, body, headers}. */
export function post(path, body, headers) {
  return request('POST', path, body, headers);
}

/** A query string from an object, skipping empty values; arrays become repeated keys. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const one of [].concat(v ?? [])) {
      if (one !== '' && one != null) q.append(k, one);
    }
  }
  const s = q.toString();
  return s ? '?' + s : '';
}
