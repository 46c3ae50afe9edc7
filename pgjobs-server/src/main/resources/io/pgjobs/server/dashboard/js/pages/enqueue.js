// Enqueue: a form to dispatch a job of a registered type with a JSON payload and options. The API's
// validation problems are shown next to the fields they name; success opens the new job.

import {post} from '../api.js';
import {h, prettyJson, errorMessage, message} from '../dom.js';
import {jobTypes} from './common.js';

const LEVELS = ['critical', 'high', 'normal', 'low', 'background'];

export default function enqueuePage(root, {query, navigate}) {
  let types = [];
  let template = '';      // the payload text last filled in from a type's template
  const general = h('div', {id: 'enqueue-errors'});
  const errors = {};      // field name -> its error paragraph
  const field = (name, label, input, hint, wide) => {
    errors[name] = h('p', {class: 'field-error', dataset: {for: name}});
    input.name = name;
    return h('label', {class: wide ? 'full' : null}, label, input, hint ? h('span', {class: 'hint'}, hint) : null, errors[name]);
  };

  const typeSelect = h('select', {id: 'enqueue-type', required: true}, h('option', {value: ''}, 'loading types…'));
  const payload = h('textarea', {id: 'enqueue-payload', rows: '9', spellcheck: 'false', value: '{}'});
  const queue = h('input', {id: 'enqueue-queue', autocomplete: 'off'});
  const priority = h('input', {id: 'enqueue-priority', list: 'priority-levels', autocomplete: 'off'});
  const delay = h('input', {id: 'enqueue-delay', type: 'number', min: '0', step: 'any', placeholder: '0'});
  const maxAttempts = h('input', {id: 'enqueue-max-attempts', type: 'number', min: '1', max: '1000'});
  const context = h('input', {id: 'enqueue-context', autocomplete: 'off', placeholder: 'free text, e.g. user-signup'});
  const key = h('input', {id: 'enqueue-key', autocomplete: 'off', placeholder: 'optional'});
  const submit = h('button', {type: 'submit', class: 'primary', id: 'enqueue-submit'}, 'Enqueue');

  const form = h('form', {class: 'panel', id: 'enqueue-form', novalidate: true, onsubmit: send},
    general,
    h('div', {class: 'form-grid'},
      field('type', 'Job type', typeSelect),
      field('queue', 'Queue', queue),
      field('priority', 'Priority', priority, 'an integer or critical, high, normal, low, background'),
      field('payload', 'Payload (JSON)', payload, null, true),
      field('delay_ms', 'Delay (seconds)', delay),
      field('max_attempts', 'Max attempts', maxAttempts),
      field('Idempotency-Key', 'Idempotency key', key, 'the same key returns the original job'),
      field('context', 'Context', context, null, true)),
    h('datalist', {id: 'priority-levels'}, LEVELS.map(l => h('option', {value: l}))),
    h('div', {class: 'buttons'}, submit));
  root.append(h('h1', null, 'Enqueue a job'), form);

  typeSelect.addEventListener('change', () => showDefaults(true));

  /** Placeholders from the chosen type's defaults; its payload template unless the user edited the payload. */
  function showDefaults(fillPayload) {
    const t = types.find(x => x.name === typeSelect.value);
    queue.placeholder = t ? t.queue : 'default';
    priority.placeholder = t ? String(t.priority) : 'normal';
    maxAttempts.placeholder = t ? String(t.max_attempts) : '3';
    if (fillPayload && t && (payload.value.trim() === '' || payload.value === template || payload.value === '{}')) {
      payload.value = template = prettyJson(t.payload_template);
    }
  }

  jobTypes().then(d => {
    types = d.types;
    typeSelect.replaceChildren(
      h('option', {value: ''}, types.length ? 'choose a type' : 'the server knows no job types'),
      ...types.map(t => h('option', {value: t.name}, t.name)));
    const wanted = Array.isArray(query.type) ? query.type[0] : query.type;
    if (wanted && types.some(t => t.name === wanted)) typeSelect.value = wanted;
    else if (types.length) typeSelect.value = types[0].name;
    showDefaults(true);
  }).catch(e => general.replaceChildren(errorMessage('Cannot load the job types', e)));

  function clearErrors() {
    general.replaceChildren();
    for (const p of Object.values(errors)) p.textContent = '';
    for (const el of form.querySelectorAll('.invalid')) el.classList.remove('invalid');
  }

  function showError(name, text) {
    const p = errors[name];
    p.textContent = p.textContent ? p.textContent + '; ' + text : text;
    p.parentElement.querySelector('input, select, textarea').classList.add('invalid');
  }

  /** The request body, or null after showing what is wrong with the form. */
  function body() {
    const b = {type: typeSelect.value};
    if (!b.type) showError('type', 'choose a job type');
    try {
      b.payload = JSON.parse(payload.value);
    } catch (e) {
      showError('payload', 'not valid JSON: ' + e.message);
    }
    if (queue.value.trim()) b.queue = queue.value.trim();
    // Every field is checked, so every mistake is shown at once (not one per submit).
    const p = priority.value.trim();
    if (p && !/^-?\d+$/.test(p) && !LEVELS.includes(p.toLowerCase())) {
      showError('priority', `"${p}" is neither an integer nor one of ${LEVELS.join(', ')}`);
    } else if (p) {
      b.priority = /^-?\d+$/.test(p) ? Number(p) : p.toLowerCase();
    }
    // A number input holding text that is not a number reports an empty value and badInput.
    if (delay.validity.badInput || (delay.value !== '' && !(Number(delay.value) >= 0))) {
      showError('delay_ms', 'must be a number of seconds, 0 or more');
    } else if (delay.value !== '') {
      b.delay_ms = Math.round(Number(delay.value) * 1000);
    }
    const attempts = Number(maxAttempts.value);
    if (maxAttempts.validity.badInput || (maxAttempts.value !== ''
        && !(Number.isInteger(attempts) && attempts >= 1 && attempts <= 1000))) {
      showError('max_attempts', 'must be an integer from 1 to 1000');
    } else if (maxAttempts.value !== '') {
      b.max_attempts = attempts;
    }
    if (context.value) b.context = context.value;
    return Object.values(errors).some(p => p.textContent) ? null : b;
  }

  async function send(event) {
    event.preventDefault();
    clearErrors();
    const b = body();
    if (!b) return;
    submit.disabled = true;
    try {
      const r = await post('/jobs', b, key.value ? {'Idempotency-Key': key.value} : undefined);
      navigate('/jobs/' + r.body.id, r.status === 201
        ? {kind: 'ok', text: `201 Created: job enqueued in queue ${r.body.queue}.`}
        : {kind: 'info', text: `${r.status}: a job with this idempotency key already exists; this is it (nothing new was enqueued).`});
    } catch (e) {
      submit.disabled = false;
      // Field problems go next to their fields ("payload.to" next to the payload); the rest on top.
      const unplaced = [];
      for (const f of e.problem?.errors || []) {
        const name = f.field.startsWith('payload') ? 'payload' : f.field === 'kind' ? 'type' : f.field;
        if (errors[name]) showError(name, (name === 'payload' && f.field !== 'payload' ? f.field + ': ' : '') + f.reason);
        else unplaced.push(f);
      }
      general.replaceChildren(e.problem?.errors?.length && !unplaced.length
        ? message('error', h('span', {class: 'code'}, e.status), e.message)
        : errorMessage(null, e));
    }
  }
}
