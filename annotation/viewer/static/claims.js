// MineAmongUs claim labels: people judge the grounding audit. Reads annotation/viewer/claims.py.
'use strict'

const $ = (id) => document.getElementById(id)
const params = new URLSearchParams(location.search)
// The analyst token (`?analyst=TOKEN`) rides in a header; `analyst=1` is only the switch.
const ANALYST_KEY = (() => {
  const v = params.get('analyst') || ''
  return ['', '0', '1', 'true', 'false', 'yes', 'no'].includes(v.toLowerCase()) ? '' : v
})()
const state = { data: null, labels: new Map() }

function headers (extra) {
  const h = Object.assign({}, extra || {})
  if (ANALYST_KEY) h['X-Analyst-Token'] = ANALYST_KEY
  return h
}

async function getJSON (url) {
  const res = await fetch(url, { headers: headers(), credentials: 'same-origin' })
  const out = await res.json()
  if (!res.ok) throw new Error(out.error || `${url}: ${res.status}`)
  return out
}

function el (tag, cls, text) {
  const e = document.createElement(tag)
  if (cls) e.className = cls
  if (text !== undefined) e.textContent = text
  return e
}

const annotator = () => $('annotator').value.trim()
const labelKey = (kind, game, rules, item) => [kind, game, rules, item].join('|')

// ------------------------------------------------------------------ evidence
const PAIRS = new Set(['ticks', 'steps', 'window', 'tick_range', 'step_range'])

function scalar (v) {
  if (v === null || v === undefined) return '—'
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(3)
  return String(v)
}

function flat (obj) {
  return Object.keys(obj).map((k) => {
    const v = obj[k]
    if (Array.isArray(v)) return `${k} ${v.map(scalar).join(', ')}`
    if (v && typeof v === 'object') return `${k} {${flat(v)}}`
    return `${k} ${scalar(v)}`
  }).join(' · ')
}

// The evidence a rule book used, one line per field: positions, sightings, ticks, ...
function evidenceNode (ev) {
  const dl = el('dl', 'evidence')
  for (const key of Object.keys(ev || {})) {
    const v = ev[key]
    dl.appendChild(el('dt', '', key.replace(/_/g, ' ')))
    const dd = el('dd')
    if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object')) {
      const ul = el('ul')
      for (const x of v) ul.appendChild(el('li', '', flat(x)))
      dd.appendChild(ul)
    } else if (Array.isArray(v)) {
      const pair = PAIRS.has(key) && v.length === 2 && v.every((x) => typeof x === 'number')
      dd.textContent = pair ? `${v[0]} – ${v[1]}` : v.map(scalar).join(key === 'rooms' ? ' → ' : ', ')
    } else if (v && typeof v === 'object') {
      dd.textContent = Object.keys(v).map((k) => `${k}: ${scalar(v[k])}`).join(', ')
    } else {
      dd.textContent = scalar(v)
    }
    dl.appendChild(dd)
  }
  return dl
}

// ------------------------------------------------------------------ claims
function claimLine (c) {
  const parts = [c.type, `subject ${c.subject}`]
  if (c.route) parts.push(`route ${c.route.join(' → ')}`)
  else if (c.room) parts.push(`room ${c.room}`)
  if (c.target) parts.push(`target ${c.target}`)
  if (c.activity) parts.push(`activity ${c.activity}`)
  parts.push(`time "${c.temporal || 'this round'}"`)
  if (c.confidence !== null && c.confidence !== undefined) parts.push(`confidence ${c.confidence}`)
  return parts.join(' · ')
}

function pair (field, labelRight, labelWrong, claim, u) {
  const box = el('span', `pair ${field}`)
  for (const [value, text] of [[true, labelRight], [false, labelWrong]]) {
    const b = el('button', `judge ${value ? 'right' : 'wrong'}`, text)
    b.type = 'button'
    b.dataset.field = field
    b.dataset.value = String(value)
    b.addEventListener('click', () => judgeClaim(claim, u, field, value))
    box.appendChild(b)
  }
  return box
}

function drawClaim (c, u) {
  const div = el('div', 'claim')
  div.dataset.claim = c.id
  div.dataset.verdict = c.verdict
  div.dataset.game = u.game
  const head = el('p', 'claim-head')
  head.appendChild(el('span', `verdict verdict-${c.verdict}`, c.verdict))
  head.appendChild(el('span', 'claim-fields', ` ${claimLine(c)}`))
  div.appendChild(head)
  if (c.text && c.text !== u.text) div.appendChild(el('p', 'claim-text', `from: “${c.text}”`))
  const why = el('p', 'reason', `reason: ${c.reason || '—'}`)
  if (c.window) why.appendChild(el('span', 'window', ` · window: steps ${c.window[0]} – ${c.window[1]}`))
  if (c.grounded !== null && c.grounded !== undefined) why.appendChild(el('span', '', ` · grounded: ${c.grounded}`))
  if (c.hit !== null && c.hit !== undefined) why.appendChild(el('span', '', ` · hit: ${c.hit}`))
  if (c.speaker_role) why.appendChild(el('span', '', ` · speaker: ${c.speaker_role}`))
  div.appendChild(why)
  div.appendChild(evidenceNode(c.evidence))
  const buttons = el('p', 'judges')
  buttons.appendChild(pair('verdict_ok', 'verdict right', 'verdict wrong', c, u))
  buttons.appendChild(pair('extraction_ok', 'extraction right', 'extraction wrong', c, u))
  div.appendChild(buttons)
  return div
}

function drawUtterance (u, prefix) {
  const art = el('article', 'utterance')
  art.dataset.utterance = u.id
  art.dataset.game = u.game
  const head = el('h3')
  if (u.run) {
    const a = el('a', '', u.run)
    const step = u.step !== null ? `?step=${u.step}` : ''
    a.href = `${prefix}${u.run}/${step}`
    head.appendChild(a)
  } else {
    head.appendChild(el('span', '', u.game))
  }
  const where = [`meeting ${u.meeting}`]
  if (u.step !== null) where.push(`step ${u.step}`)
  head.appendChild(el('span', 'where', ` · ${where.join(', ')} · ${u.speaker}`))
  art.appendChild(head)
  art.appendChild(el('blockquote', 'said', u.text))
  for (const c of u.claims) art.appendChild(drawClaim(c, u))
  const miss = el('p', 'missed')
  miss.appendChild(el('span', '', `${u.claims.length} claim(s) extracted; claims missed: `))
  const input = el('input', 'missed-count')
  input.type = 'number'
  input.min = '0'
  input.size = 3
  miss.appendChild(input)
  const save = el('button', 'save-missed', 'save')
  save.type = 'button'
  save.addEventListener('click', () => saveMissed(u, input.value))
  miss.appendChild(save)
  art.appendChild(miss)
  return art
}

// Show the annotator's standing judgements on the buttons and the counts.
function paint () {
  const who = annotator()
  const rules = state.data ? state.data.rules : ''
  let judged = 0
  for (const div of document.querySelectorAll('.claim')) {
    const l = state.labels.get(labelKey('claim', div.dataset.game, rules, div.dataset.claim) + '|' + who)
    for (const b of div.querySelectorAll('button.judge')) {
      const v = l ? l[b.dataset.field] : null
      b.classList.toggle('chosen', v !== null && v !== undefined && String(v) === b.dataset.value)
    }
    div.dataset.verdictOk = l && l.verdict_ok !== null ? String(l.verdict_ok) : ''
    div.dataset.extractionOk = l && l.extraction_ok !== null ? String(l.extraction_ok) : ''
    if (l && (l.verdict_ok !== null || l.extraction_ok !== null)) judged += 1
  }
  for (const art of document.querySelectorAll('.utterance')) {
    const l = state.labels.get(labelKey('utterance', art.dataset.game, rules, art.dataset.utterance) + '|' + who)
    const input = art.querySelector('.missed-count')
    if (document.activeElement !== input) input.value = l && l.missed !== null ? String(l.missed) : ''
    art.dataset.missed = l && l.missed !== null ? String(l.missed) : ''
  }
  const total = document.querySelectorAll('.claim').length
  $('claims-counts').textContent = state.data && state.data.books.length
    ? `${state.data.claims} claim(s) in the ${rules} audit; ${judged} of ${total} judged by ${who || '(enter your name)'}`
    : ''
}

function filter () {
  const want = $('verdict-filter').value
  for (const div of document.querySelectorAll('.claim')) div.hidden = Boolean(want) && div.dataset.verdict !== want
  for (const art of document.querySelectorAll('.utterance')) {
    const shown = art.querySelectorAll('.claim:not([hidden])').length
    art.hidden = Boolean(want) && shown === 0
  }
}

function draw () {
  const d = state.data
  $('no-audit').hidden = Boolean(d.books.length)
  if (!d.books.length) {
    $('no-audit').textContent = `No grounding audit of this study yet: run \`${d.commands.mineamongus}\` (and \`${d.commands.quack}\` for QUACK's rule book), then reload this page.`
  }
  const book = $('book')
  book.innerHTML = ''
  for (const b of d.books) {
    const o = el('option', '', b)
    o.value = b
    o.selected = b === d.rules
    book.appendChild(o)
  }
  const vf = $('verdict-filter')
  const keep = vf.value
  vf.innerHTML = '<option value="">all</option>'
  for (const v of d.verdicts) {
    const o = el('option', '', v)
    o.value = v
    vf.appendChild(o)
  }
  vf.value = d.verdicts.includes(keep) ? keep : ''
  const box = $('utterances')
  box.innerHTML = ''
  for (const u of d.utterances) box.appendChild(drawUtterance(u, d.game_prefix || '../game/'))
  filter()
  paint()
  document.body.dataset.rules = d.rules
}

async function loadLabels () {
  state.labels.clear()
  try {
    for (const l of await getJSON('api/labels')) {
      const item = l.kind === 'claim' ? l.claim : l.utterance
      state.labels.set(labelKey(l.kind, l.game, l.rules, item) + '|' + l.annotator, l)
    }
    $('claims-error').hidden = true
  } catch (err) {
    $('claims-error').hidden = false
    $('claims-error').textContent = String(err.message || err)
  }
}

async function load (rules) {
  const q = new URLSearchParams()
  if (rules) q.set('rules', rules)
  if ($('analyst').checked) q.set('analyst', '1')
  state.data = await getJSON(`api/claims?${q}`)
  await loadLabels()
  draw()
}

async function post (body) {
  const who = annotator()
  if (!who) {
    $('claims-status').textContent = 'enter your name (annotator) first'
    $('annotator').focus()
    return null
  }
  localStorage.setItem('mau-annotator', who)
  // Same-origin JSON only: the viewer refuses any other write.
  const res = await fetch('api/labels', {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json' }),
    credentials: 'same-origin',
    body: JSON.stringify(Object.assign({ annotator: who, rules: state.data.rules }, body))
  })
  const out = await res.json()
  $('claims-status').textContent = res.ok ? 'saved' : out.error
  if (!res.ok) return null
  const item = out.kind === 'claim' ? out.claim : out.utterance
  state.labels.set(labelKey(out.kind, out.game, out.rules, item) + '|' + out.annotator, out)
  paint()
  document.body.dataset.saved = String(Number(document.body.dataset.saved || 0) + 1)
  return out
}

function judgeClaim (c, u, field, value) {
  const l = state.labels.get(labelKey('claim', u.game, state.data.rules, c.id) + '|' + annotator())
  // Pressing the chosen button again withdraws the judgement.
  const next = l && l[field] === value ? null : value
  return post({ kind: 'claim', game: u.game, claim: c.id, [field]: next })
}

function saveMissed (u, raw) {
  const missed = raw === '' ? null : Number(raw)
  return post({ kind: 'utterance', game: u.game, utterance: u.id, missed })
}

async function main () {
  $('annotator').value = localStorage.getItem('mau-annotator') || params.get('annotator') || ''
  if (ANALYST_KEY || ['1', 'true', 'yes'].includes((params.get('analyst') || '').toLowerCase())) $('analyst').checked = true
  if (ANALYST_KEY) $('study-link').href = `../?analyst=${encodeURIComponent(ANALYST_KEY)}`
  $('annotator').addEventListener('input', paint)
  $('verdict-filter').addEventListener('change', filter)
  $('book').addEventListener('change', (e) => load(e.target.value))
  $('analyst').addEventListener('change', () => load(state.data && state.data.rules))
  try {
    await load(params.get('rules') || '')
  } catch (err) {
    $('claims-error').hidden = false
    $('claims-error').textContent = String(err.message || err)
  }
  document.body.dataset.ready = '1'
}

main()
