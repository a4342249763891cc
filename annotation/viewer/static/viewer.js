// MineAmongUs viewer: one page, no build step. Reads the JSON API of annotation/viewer/app.py.
'use strict'

const COLOURS = {
  red: '#d32f2f', blue: '#1e5cff', green: '#1b8a3a', pink: '#f06fb0',
  orange: '#f57c00', yellow: '#f5d000', black: '#3a3a3a', white: '#f5f5f5'
}
const SVGNS = 'http://www.w3.org/2000/svg'
const state = {
  meta: null,
  step: 0,
  cache: new Map(),
  playing: null,
  labels: [],
  selected: null,
  // The "Decision of" seat follows the step (a living player who acted) until the
  // reader picks one; then it stays theirs.
  picked: false,
  // The chat follows its newest line unless the reader has scrolled up; `seen` is how
  // many lines there were when they last saw the end.
  chat: { pinned: true, seen: 0, count: 0 }
}
const $ = (id) => document.getElementById(id)
const analyst = () => $('analyst').checked
const colourOf = (agent) => COLOURS[agent] || '#888'
const cap = (s) => s ? s[0].toUpperCase() + s.slice(1) : ''
// The analyst token (`?analyst=TOKEN`, printed when the viewer starts) opens a live game
// that a person plays; `analyst=1` is only the switch and opens nothing while it runs.
const ANALYST_KEY = (() => {
  const v = new URLSearchParams(location.search).get('analyst') || ''
  return ['', '0', '1', 'true', 'false', 'yes', 'no'].includes(v.toLowerCase()) ? '' : v
})()

function headers (extra) {
  const h = Object.assign({}, extra || {})
  if (ANALYST_KEY) h['X-Analyst-Token'] = ANALYST_KEY
  return h
}

// A frame's address: images cannot send a header, so the token rides in the query.
const frameUrl = (url) => ANALYST_KEY ? `${url}?analyst=${encodeURIComponent(ANALYST_KEY)}` : url

async function getJSON (url) {
  const res = await fetch(url, { headers: headers(), credentials: 'same-origin' })
  if (!res.ok) throw new Error(`${url}: ${res.status}`)
  return res.json()
}

async function loadMeta () {
  state.meta = await getJSON(`api/game?analyst=${analyst() ? 1 : 0}`)
  state.cache.clear()
  const m = state.meta
  $('game-id').textContent = m.game_id
  if (m.study_url) { $('study-link').href = m.study_url; $('study-link').hidden = false }
  $('sealed').hidden = !m.sealed
  $('sealed').textContent = m.sealed ? m.sealed_message : ''
  $('notice').hidden = !m.stopped
  $('notice').textContent = m.stopped || ''
  drawProblem(m.problem)
  drawResult(m.result)
  const sc = $('scrubber')
  sc.max = String(m.steps.length ? m.last_step : 0)
  if (!state.selected || !m.agents.includes(state.selected)) state.selected = m.agents[0]
  fillSelect($('player'), m.agents, state.selected, cap)
  fillSelect($('actor'), m.agents, $('actor').value || m.agents[0], cap)
  drawMapBase()
  drawTimeline()
}

// A record the shared reader refuses is shown as its error alone (file, line, fix).
function drawProblem (problem) {
  const box = $('record-error')
  box.hidden = !problem
  document.body.dataset.broken = problem ? '1' : ''
  if (!problem) return
  $('error-file').textContent = problem.file
  $('error-line').textContent = problem.line === null ? '(none)' : String(problem.line)
  $('error-problem').textContent = problem.problem
  $('error-fix').textContent = problem.fix
  $('live-badge').hidden = true
  $('step-label').textContent = 'record cannot be shown'
  for (const id of ['prev', 'next', 'play', 'scrubber', 'save-label']) $(id).disabled = true
}

// The banner of an ended game: the winning side and the ending; the impostors' names
// only in the analyst view (the API leaves them out otherwise).
function drawResult (result) {
  const el = $('winner')
  el.hidden = !result
  el.textContent = ''
  if (!result) { delete el.dataset.winner; return }
  el.dataset.winner = result.winner || 'none'
  el.appendChild(document.createTextNode(result.headline))
  const names = result.impostors || []
  if (names.length) {
    const who = document.createElement('span')
    who.className = 'impostors'
    who.textContent = `impostors: ${names.map(cap).join(', ')}`
    el.appendChild(who)
  }
  if (result.reason) {
    const why = document.createElement('span')
    why.className = 'impostors'
    why.textContent = `(${result.reason})`
    el.appendChild(why)
  }
}

// The seat "Decision of" shows when the reader has not picked one: a living player
// who acted at this step, else any player who acted, else the first seat. A seat that
// still qualifies is kept, so stepping does not jump between players.
function defaultSeat (data) {
  const agents = state.meta.agents
  const acted = agents.filter((a) => data.decisions[a])
  const alive = acted.filter((a) => (data.players[a] || {}).status === 'alive')
  if (alive.includes(state.selected)) return state.selected
  if (!alive.length && acted.includes(state.selected)) return state.selected
  return alive[0] || acted[0] || agents[0]
}

function pickSeat (agent) {
  state.selected = agent
  state.picked = true
  $('player').value = agent
}

function fillSelect (el, values, selected, label) {
  el.innerHTML = ''
  for (const v of values) {
    const o = document.createElement('option')
    o.value = v; o.textContent = label ? label(v) : v
    if (v === selected) o.selected = true
    el.appendChild(o)
  }
}

function stepMeta (n) {
  const steps = state.meta.steps
  let best = steps[0]
  for (const s of steps) { if (s.step <= n) best = s; else break }
  return best
}

async function stepData (n) {
  const key = `${n}:${analyst()}`
  if (!state.cache.has(key)) state.cache.set(key, getJSON(`api/step/${n}?analyst=${analyst() ? 1 : 0}`))
  return state.cache.get(key)
}

async function show (n) {
  if (state.meta && state.meta.problem) {
    $('step-label').textContent = 'record cannot be shown'
    return
  }
  if (!state.meta || !state.meta.steps.length) {
    $('step-label').textContent = state.meta && state.meta.sealed ? 'hidden while a person plays' : 'waiting for the game to start'
    return
  }
  n = Math.max(0, Math.min(n, state.meta.last_step))
  state.step = n
  $('scrubber').value = String(n)
  $('label-step').value = String(n)
  const sm = stepMeta(n)
  $('step-label').textContent = `step ${n} · ${sm.phase} · tick ${sm.tick}` + (sm.speaker ? ` · ${cap(sm.speaker)} speaks` : '')
  drawPlayers(n)
  let data
  try { data = await stepData(n) } catch (err) { return }
  if (state.step !== n) return // the user moved on
  if (!state.picked && state.meta.agents.length) {
    state.selected = defaultSeat(data)
    $('player').value = state.selected
  }
  drawFrames(data)
  drawTranscript(data)
  drawDecision(data)
  drawFindings(n)
  document.body.dataset.step = String(n)
}

function drawFrames (data) {
  const box = $('frames')
  box.innerHTML = ''
  for (const agent of state.meta.agents) {
    const fig = document.createElement('figure')
    fig.className = 'frame'
    fig.dataset.agent = agent
    const p = data.players[agent]
    if (p && p.status !== 'alive') fig.classList.add('dead')
    const url = data.frames[agent]
    if (url) {
      const img = document.createElement('img')
      img.loading = 'lazy'; img.src = frameUrl(url); img.alt = `${cap(agent)}'s view at step ${data.step}`
      fig.appendChild(img)
    } else fig.classList.add('noframe')
    const cap_ = document.createElement('figcaption')
    const sw = document.createElement('span'); sw.className = 'swatch'; sw.style.background = colourOf(agent)
    cap_.appendChild(sw)
    cap_.appendChild(document.createTextNode(cap(agent) + (state.meta.roles[agent] === 'impostor' ? ' · impostor' : '')))
    fig.appendChild(cap_)
    fig.addEventListener('click', () => { pickSeat(agent); drawDecision(data) })
    box.appendChild(fig)
  }
}

function svg (tag, attrs, parent) {
  const el = document.createElementNS(SVGNS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  if (parent) parent.appendChild(el)
  return el
}

function drawMapBase () {
  const map = state.meta.map
  const el = $('map')
  el.innerHTML = ''
  if (!map.rooms) return
  let x0 = Infinity; let z0 = Infinity; let x1 = -Infinity; let z1 = -Infinity
  for (const r of [...map.rooms, ...map.corridors]) {
    x0 = Math.min(x0, r.rect.x0); z0 = Math.min(z0, r.rect.z0)
    x1 = Math.max(x1, r.rect.x1 + 1); z1 = Math.max(z1, r.rect.z1 + 1)
  }
  el.setAttribute('viewBox', `${x0 - 2} ${z0 - 2} ${x1 - x0 + 4} ${z1 - z0 + 4}`)
  const base = svg('g', { id: 'map-base' }, el)
  for (const c of map.corridors) {
    svg('rect', { class: 'corridor', x: c.rect.x0, y: c.rect.z0, width: c.rect.x1 - c.rect.x0 + 1, height: c.rect.z1 - c.rect.z0 + 1 }, base)
  }
  for (const r of map.rooms) {
    svg('rect', { class: 'room', 'data-room': r.name, x: r.rect.x0, y: r.rect.z0, width: r.rect.x1 - r.rect.x0 + 1, height: r.rect.z1 - r.rect.z0 + 1 }, base)
    const t = svg('text', { class: 'room-label', x: (r.rect.x0 + r.rect.x1 + 1) / 2, y: (r.rect.z0 + r.rect.z1 + 1) / 2 }, base)
    t.textContent = r.name.replace('_', ' ')
  }
  for (const s of map.stations) svg('rect', { class: 'station', x: s.cell[0] + 0.25, y: s.cell[1] + 0.25, width: 0.5, height: 0.5 }, base)
  svg('rect', { class: 'button', x: map.button[0] + 0.1, y: map.button[1] + 0.1, width: 0.8, height: 0.8 }, base)
  svg('g', { id: 'map-trails' }, el)
  svg('g', { id: 'map-bodies' }, el)
  svg('g', { id: 'map-players' }, el)
}

function drawPlayers (n) {
  const sm = stepMeta(n)
  const trails = $('map-trails'); const bodies = $('map-bodies'); const players = $('map-players')
  if (!players) return
  trails.innerHTML = ''; bodies.innerHTML = ''; players.innerHTML = ''
  // Each player's trail: its sampled path over the last few steps up to this one.
  // Logs with pose samples (`trace`) give the real path; older logs only the step ends,
  // drawn dashed because the straight segments between them are not the path walked.
  for (const agent of state.meta.agents) {
    const pts = []
    let sampled = false
    for (const s of state.meta.steps) {
      if (s.step > n) break
      if (s.step < n - 5) continue
      const trail = s.trail[agent] || []
      if (trail.length) sampled = true
      for (const p of trail) pts.push(`${p[0]},${p[1]}`)
      const snap = s.players[agent]
      if (snap && snap.status === 'alive' && !trail.length) pts.push(`${snap.pos[0]},${snap.pos[2]}`)
    }
    if (pts.length > 1) svg('polyline', { class: sampled ? 'trail' : 'trail approx', points: pts.join(' '), stroke: colourOf(agent), 'data-agent': agent }, trails)
  }
  for (const [victim, pos] of Object.entries(sm.bodies || {})) {
    const g = svg('g', { class: 'body', 'data-victim': victim, stroke: colourOf(victim) }, bodies)
    svg('line', { x1: pos[0] - 0.8, y1: pos[2] - 0.8, x2: pos[0] + 0.8, y2: pos[2] + 0.8 }, g)
    svg('line', { x1: pos[0] - 0.8, y1: pos[2] + 0.8, x2: pos[0] + 0.8, y2: pos[2] - 0.8 }, g)
  }
  let alive = 0
  for (const [agent, p] of Object.entries(sm.players || {})) {
    if (p.status !== 'alive') continue
    alive += 1
    const [x, , z] = p.pos
    const yaw = (p.yaw || 0) * Math.PI / 180
    svg('line', { class: 'facing', x1: x, y1: z, x2: x - Math.sin(yaw) * 2, y2: z + Math.cos(yaw) * 2, stroke: colourOf(agent) }, players)
    const dot = svg('circle', { class: 'player-dot', cx: x, cy: z, r: 0.8, fill: colourOf(agent), 'data-agent': agent }, players)
    const title = svg('title', {}, dot); title.textContent = `${cap(agent)} in ${p.room}`
  }
  $('phase-line').textContent = `${alive} alive · ${sm.phase}`
  $('map').dataset.alive = String(alive)
}

const atEnd = (el) => el.scrollHeight - el.scrollTop - el.clientHeight < 4

// The reader scrolled: at the end the chat follows new lines again; above it, it
// stays where they put it.
function chatScrolled () {
  const ol = $('transcript')
  state.chat.pinned = atEnd(ol)
  if (state.chat.pinned) state.chat.seen = state.chat.count
  drawChatHint()
}

function drawChatHint () {
  const unseen = state.chat.count - state.chat.seen
  const hint = $('chat-new')
  hint.hidden = state.chat.pinned || unseen <= 0
  hint.textContent = `${unseen} new line${unseen === 1 ? '' : 's'} \u25BC`
}

function chatToEnd () {
  const ol = $('transcript')
  ol.scrollTop = ol.scrollHeight
  state.chat.pinned = true
  state.chat.seen = state.chat.count
  drawChatHint()
}

function drawTranscript (data) {
  const ol = $('transcript')
  const keep = ol.scrollTop
  ol.innerHTML = ''
  for (const e of data.transcript) {
    const li = document.createElement('li')
    li.dataset.step = String(e.step)
    if (e.kind === 'server_message') { li.className = 'server'; li.textContent = `[Server] ${e.text}` } else if (e.kind === 'speech') {
      li.className = e.failed ? 'speech failed' : 'speech'
      li.textContent = e.failed ? `${cap(e.speaker)}: (turn failed: ${e.error_kind || 'error'})` : (e.passed ? `${cap(e.speaker)}: (passes)` : `${cap(e.speaker)}: ${e.text}`)
    } else if (e.kind === 'vote') {
      li.className = 'vote'
      li.textContent = e.failed ? `${cap(e.voter)} cast no ballot (failed: ${e.error_kind || 'error'})` : `${cap(e.voter)} votes ${e.target === null ? '(abstains)' : cap(e.target)}`
    } else if (e.kind === 'meeting_start') {
      li.className = 'outcome'; li.textContent = `Meeting ${e.index} (${e.trigger} by ${cap(e.caller)})`
    } else if (e.kind === 'meeting_end') {
      li.className = 'outcome'; li.textContent = `Meeting ${e.index}: ${e.outcome}${e.ejected ? ' ' + cap(e.ejected) : ''} · tally ${JSON.stringify(e.tally)}`
    } else if (e.kind === 'eject') {
      li.className = 'outcome'; li.textContent = `${cap(e.agent)} was ejected${e.role ? ' (' + e.role + ')' : ''}`
    } else if (e.kind === 'game_end') {
      li.className = 'outcome'; li.textContent = `Game over: ${e.winner || 'no winner'} (${e.ending})`
    } else continue
    ol.appendChild(li)
  }
  state.chat.count = ol.children.length
  if (state.chat.pinned) chatToEnd()
  else {
    ol.scrollTop = keep
    // Stepping back below the lines already seen leaves nothing unseen.
    state.chat.seen = Math.min(state.chat.seen, state.chat.count)
    drawChatHint()
  }
}

function pre (text) { const p = document.createElement('pre'); p.textContent = text; return p }

function drawDecision (data) {
  const box = $('decision')
  box.innerHTML = ''
  const agent = state.selected
  const d = data.decisions[agent]
  const prog = data.programs[agent]
  if (!d) { box.textContent = `${cap(agent)} made no decision at step ${data.step}.`; return }
  const head = document.createElement('p')
  head.textContent = `module ${d.module || '-'} · ${d.valid ? 'valid' : 'invalid: ' + d.error + ' (' + d.error_kind + ')'} · ${Math.round(d.latency_ms || 0)} ms`
  box.appendChild(head)
  box.appendChild(pre('program: ' + JSON.stringify(d.program)))
  if (d.vote !== undefined && d.vote !== null) box.appendChild(pre('vote: ' + d.vote))
  if (d.reasoning) box.appendChild(pre('reasoning: ' + d.reasoning))
  if (analyst() && d.narration) { const s = pre('private narration: ' + d.narration); s.className = 'secret'; box.appendChild(s) }
  if (prog) box.appendChild(pre(`outcome: ${prog.status}${prog.reason ? ' (' + prog.reason + ')' : ''}, ticks ${prog.start_tick}-${prog.end_tick}`))
  for (const c of (d.calls || [])) {
    const s = pre(`call ${c.purpose || ''} · ${c.model || ''} · in ${c.tokens_in || 0} / out ${c.tokens_out || 0} / cached ${c.tokens_cached || 0} tokens · ${Math.round(c.latency_ms || 0)} ms · $${c.cost_usd === null || c.cost_usd === undefined ? '?' : c.cost_usd}\n${c.raw || ''}`)
    s.className = 'call'
    box.appendChild(s)
  }
}

// The finding lines of annotations.jsonl (a judge's or detector's `finding`, a panel's
// `panel_finding`); its header and call lines are not findings.
function findingRows () {
  return (state.meta.annotations || []).filter(a => (a.kind === 'finding' || a.kind === 'panel_finding') && a.step != null)
}

function findingKind (a) {
  if (a.kind === 'panel_finding') return 'panel'
  return (a.source || '').startsWith('detector') ? 'detector' : 'judge'
}

function findingsAt (n) {
  const out = []
  for (const a of findingRows()) if (a.step === n) out.push({ kind: findingKind(a), text: `${a.atom} · ${cap(a.actor || '')} · ${a.source || ''}: ${a.evidence || (a.judges || []).join(', ')}` })
  for (const c of state.meta.claims || []) {
    const w = c.window || []
    if (w.length === 2 && w[1] === n) out.push({ kind: 'claim', text: `claim by ${cap(c.speaker)} (${c.type}): "${c.text}" → ${c.verdict}` })
  }
  for (const l of state.labels) if (l.step === n && l.game === state.meta.game_id) out.push({ kind: 'label', text: `label ${l.atom} · ${cap(l.actor)} by ${l.annotator}: ${l.evidence}` })
  return out
}

function drawFindings (n) {
  const ul = $('findings')
  ul.innerHTML = ''
  for (const f of findingsAt(n)) { const li = document.createElement('li'); li.className = f.kind; li.textContent = f.text; ul.appendChild(li) }
}

function drawTimeline () {
  const tl = $('timeline')
  tl.innerHTML = ''
  const last = Math.max(1, state.meta.last_step)
  const marks = []
  for (const a of findingRows()) marks.push([a.step, findingKind(a)])
  for (const c of state.meta.claims || []) if ((c.window || []).length === 2) marks.push([c.window[1], 'claim'])
  for (const l of state.labels) if (l.game === state.meta.game_id) marks.push([l.step, 'label'])
  for (const [step, kind] of marks) {
    const m = document.createElement('div')
    m.className = `mark ${kind}`; m.style.left = `${(100 * step) / last}%`; m.title = `${kind} at step ${step}`
    m.addEventListener('click', () => show(step))
    tl.appendChild(m)
  }
}

async function loadLabels () {
  // Withheld (403) while a person plays, unless the page holds the analyst token.
  try { state.labels = await getJSON('api/labels') } catch (err) { state.labels = [] }
  const ul = $('labels')
  ul.innerHTML = ''
  for (const l of state.labels) {
    if (l.game !== state.meta.game_id) continue
    const li = document.createElement('li'); li.className = 'label'
    li.textContent = `${l.annotator}: ${l.atom} at step ${l.step} by ${cap(l.actor)}${l.evidence ? ' — ' + l.evidence : ''}`
    ul.appendChild(li)
  }
  drawTimeline()
}

async function loadCodebook () {
  const atoms = await getJSON('api/codebook')
  fillSelect($('atom'), atoms.map(a => a.letter), atoms[0] && atoms[0].letter, (x) => {
    const a = atoms.find(t => t.letter === x)
    return a && a.name ? `${x} · ${a.name}` : x
  })
}

async function saveLabel (ev) {
  ev.preventDefault()
  const body = {
    annotator: $('annotator').value.trim(), atom: $('atom').value, step: Number($('label-step').value),
    actor: $('actor').value, evidence: $('evidence').value
  }
  localStorage.setItem('mau-annotator', body.annotator)
  // Same-origin JSON only: the viewer refuses any other write.
  const res = await fetch('api/labels', { method: 'POST', headers: headers({ 'Content-Type': 'application/json' }), credentials: 'same-origin', body: JSON.stringify(body) })
  const out = await res.json()
  $('label-status').textContent = res.ok ? 'saved' : out.error
  if (res.ok) { $('evidence').value = ''; await loadLabels(); drawFindings(state.step) }
}

function togglePlay () {
  if (state.playing) { clearInterval(state.playing); state.playing = null; $('play').innerHTML = '&#9654;'; return }
  $('play').innerHTML = '&#10074;&#10074;'
  state.playing = setInterval(() => {
    if (state.step >= state.meta.last_step) { togglePlay(); return }
    show(state.step + 1)
  }, 600)
}

function startLive () {
  const es = new EventSource('api/live')
  es.addEventListener('broken', async () => {
    es.close()
    await loadMeta() // with the analyst token, the problem's full text
    show(state.step)
  })
  es.addEventListener('step', async (e) => {
    const msg = JSON.parse(e.data)
    $('live-badge').hidden = msg.over || msg.stopped
    if (msg.last_step !== state.meta.last_step || msg.steps !== state.meta.steps.length || msg.over !== state.meta.over || msg.stopped !== Boolean(state.meta.stopped)) {
      const follow = $('follow').checked && (state.step >= state.meta.last_step - 1)
      const wasSealed = state.meta.sealed
      await loadMeta()
      if (wasSealed && !state.meta.sealed) await loadLabels() // the game ended: labels open
      if (follow || wasSealed) show(state.meta.last_step); else show(state.step)
    }
    if (msg.over) es.close()
  })
}

async function main () {
  $('annotator').value = localStorage.getItem('mau-annotator') || ''
  if (ANALYST_KEY) $('analyst').checked = true
  await loadMeta()
  await Promise.all([loadCodebook(), loadLabels()])
  $('live-badge').hidden = state.meta.over || Boolean(state.meta.stopped) || Boolean(state.meta.problem)
  $('scrubber').addEventListener('input', (e) => show(Number(e.target.value)))
  $('prev').addEventListener('click', () => show(state.step - 1))
  $('next').addEventListener('click', () => show(state.step + 1))
  $('play').addEventListener('click', togglePlay)
  $('player').addEventListener('change', async (e) => { pickSeat(e.target.value); drawDecision(await stepData(state.step)) })
  $('transcript').addEventListener('scroll', chatScrolled)
  $('chat-new').addEventListener('click', chatToEnd)
  $('analyst').addEventListener('change', async () => { await loadMeta(); show(state.step) })
  $('label-form').addEventListener('submit', saveLabel)
  document.addEventListener('keydown', (e) => {
    if (['INPUT', 'TEXTAREA', 'SELECT'].includes(document.activeElement.tagName) && document.activeElement.id !== 'scrubber') return
    if (e.key === 'ArrowRight') { e.preventDefault(); show(state.step + 1) } else if (e.key === 'ArrowLeft') { e.preventDefault(); show(state.step - 1) } else if (e.key === ' ') { e.preventDefault(); togglePlay() } else if (e.key === 'Home') show(0); else if (e.key === 'End') show(state.meta.last_step)
  })
  // A game opens on its last step, finished or live (step 0 is the set-up: no frames yet).
  const initial = Number(new URLSearchParams(location.search).get('step') || state.meta.last_step)
  await show(initial)
  if (!state.meta.over && !state.meta.problem) startLive()
  document.body.dataset.ready = '1'
}

main()
