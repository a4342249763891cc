// MineAmongUs study page: every game of a tournament, live. Reads annotation/viewer/study.py.
'use strict'

const $ = (id) => document.getElementById(id)
// The analyst token of the study's address is carried to each game's page.
const ANALYST = new URLSearchParams(location.search).get('analyst') || ''

function cell (tr, text) {
  const td = document.createElement('td')
  td.textContent = text
  tr.appendChild(td)
  return td
}

function render (s) {
  $('study-name').textContent = s.name ? `study ${s.name} (${s.world} world)` : ''
  $('study-error').hidden = !s.error
  $('study-error').textContent = s.error || ''
  const c = s.counts || {}
  $('counts').textContent = Object.keys(c).map((k) => `${c[k]} ${k}`).join(', ')
  const running = (s.games || []).some((g) => g.status === 'running')
  $('live-badge').hidden = !running
  const body = $('games').querySelector('tbody')
  body.innerHTML = ''
  for (const g of s.games || []) {
    const tr = document.createElement('tr')
    tr.dataset.key = g.key
    tr.dataset.status = g.status
    cell(tr, g.arm)
    cell(tr, String(g.seed))
    const st = cell(tr, g.status)
    st.className = `status ${g.status}`
    if (g.reason) st.title = g.reason
    cell(tr, String(g.attempts))
    cell(tr, g.step === null ? '' : String(g.step))
    const link = cell(tr, '')
    if (g.url) {
      const a = document.createElement('a')
      a.href = ANALYST ? `${g.url}?analyst=${encodeURIComponent(ANALYST)}` : g.url
      a.textContent = g.status === 'running' ? 'watch' : 'replay'
      link.appendChild(a)
    }
    // A game whose record cannot be read: its error (file, line, fix); its page says the same.
    const rec = cell(tr, g.problem ? g.problem.message : '')
    if (g.problem) { rec.className = 'broken'; tr.dataset.broken = '1' }
    body.appendChild(tr)
  }
  document.body.dataset.games = String((s.games || []).length)
  document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1)
  document.body.dataset.ready = '1'
  boardWatch(s)
}

async function main () {
  const res = await fetch('api/study', { credentials: 'same-origin' })
  render(await res.json())
  const es = new EventSource('api/live')
  es.addEventListener('study', (e) => render(JSON.parse(e.data)))
  const sw = $('board-analyst')
  sw.checked = Boolean(ANALYST)
  sw.addEventListener('change', loadBoard)
  loadBoard()
  setInterval(() => { if (sw.checked) loadBoard() }, BOARD_POLL_MS)
}

// ---------------------------------------------------------------- the ratings board
// `GET api/board` (annotation/viewer/board.py): `mineamongus rank` on the study's finished
// games, one table per role. It names the side each player type played, so it is an
// analyst view (the switch, or the analyst address). It is asked for again when the live
// list shows a game finishing, and every BOARD_POLL_MS for games put into the study's
// folder by hand (not in the list); the server answers from its cache until one finishes.
const BOARD_POLL_MS = 10000
const BOARD_HEAD = ['rank', 'range', 'group', 'tier', 'player', 'games', 'wins',
  'win rate [95%]', 'BT [95%]', 'mu', 'sigma', 'mu-3sigma', 'vs ruler']
let boardSeen = null // game key -> finished, in the previous list
let boardBusy = false
let boardAgain = false

const boardOver = (g) => Boolean(g.over) || ['done', 'invalid', 'failed'].includes(g.status)
const num = (v, digits, sign) => v === null || v === undefined
  ? '-' : (sign && v >= 0 ? '+' : '') + Number(v).toFixed(digits)
const span = (lo, hi, digits, sign) => lo === null && hi === null
  ? '-' : `${num(lo, digits, sign)}..${num(hi, digits, sign)}`

function boardWatch (s) {
  const now = new Map((s.games || []).map((g) => [g.key, boardOver(g)]))
  const finished = boardSeen !== null && [...now].some(([k, over]) => over && !boardSeen.get(k))
  boardSeen = now
  if (finished && $('board-analyst').checked) loadBoard()
}

async function loadBoard () {
  if (boardBusy) { boardAgain = true; return }
  boardBusy = true
  try {
    const key = $('board-analyst').checked ? (ANALYST || '1') : '0'
    const res = await fetch(`api/board?analyst=${encodeURIComponent(key)}`, { credentials: 'same-origin' })
    renderBoard(await res.json())
  } catch (err) {
    renderBoard({ status: 'error', message: `the board could not be loaded: ${err}`, roles: {} })
  } finally {
    boardBusy = false
    if (boardAgain) { boardAgain = false; loadBoard() }
  }
}

function boardRow (r) {
  const tr = document.createElement('tr')
  tr.dataset.player = r.player
  tr.dataset.role = r.role
  const ruler = r.vs_ruler_games
    ? `${num(r.vs_ruler_win_rate, 2)} [${span(r.vs_ruler_low, r.vs_ruler_high, 2)}] (${r.vs_ruler_games})`
    : '-'
  const cells = [r.rank === null ? '-' : String(r.rank), span(r.rank_low, r.rank_high, 0),
    r.group, String(r.tier), r.few_games ? `${r.player} *` : r.player, String(r.games),
    String(r.wins), `${num(r.win_rate, 2)} [${span(r.win_rate_low, r.win_rate_high, 2)}]`,
    `${num(r.bt, 2, true)} [${span(r.bt_low, r.bt_high, 2, true)}]`, num(r.mu, 1),
    num(r.sigma, 1), num(r.conservative, 1), ruler]
  cells.forEach((text, i) => {
    const td = cell(tr, text)
    if (BOARD_HEAD[i] === 'player') {
      td.className = r.few_games ? 'player few' : 'player'
      if (r.note) td.title = r.note
    }
  })
  return tr
}

function renderBoard (b) {
  const roles = b.roles || {}
  $('board-message').textContent = b.message || ''
  $('board-message').hidden = !b.message
  const box = $('board-tables')
  box.innerHTML = ''
  const notes = $('board-notes')
  notes.innerHTML = ''
  $('board-describe').textContent = b.status === 'ok' ? b.describe : ''
  if (b.status === 'ok') {
    for (const role of ['impostor', 'crew']) {
      const h = document.createElement('h3')
      h.textContent = `as ${role}`
      box.appendChild(h)
      const table = document.createElement('table')
      table.className = 'board'
      table.dataset.role = role
      const head = document.createElement('tr')
      for (const name of BOARD_HEAD) {
        const th = document.createElement('th')
        th.textContent = name
        head.appendChild(th)
      }
      table.createTHead().appendChild(head)
      const body = table.createTBody()
      for (const r of roles[role] || []) body.appendChild(boardRow(r))
      box.appendChild(table)
    }
    const rows = [...(roles.impostor || []), ...(roles.crew || [])]
    const lines = []
    if (rows.some((r) => r.few_games)) lines.push(`* fewer than ${b.min_games} games in the role`)
    for (const r of rows) {
      // The star already says "few games"; the other notes are given in full.
      const rest = (r.note || '').split('; ').filter((n) => n && !n.startsWith('few games'))
      if (rest.length) lines.push(`${r.player} (${r.role}): ${rest.join('; ')}`)
    }
    lines.push(...(b.notes || []).map((n) => `note: ${n}`))
    for (const text of lines) {
      const li = document.createElement('li')
      li.textContent = text
      notes.appendChild(li)
    }
  } else {
    for (const n of b.notes || []) {
      const li = document.createElement('li')
      li.textContent = `note: ${n}`
      notes.appendChild(li)
    }
  }
  document.body.dataset.board = b.status || ''
  document.body.dataset.boardVersion = b.version || ''
  document.body.dataset.boardUpdates = String(Number(document.body.dataset.boardUpdates || 0) + 1)
}

main()
