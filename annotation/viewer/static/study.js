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
}

async function main () {
  const res = await fetch('api/study', { credentials: 'same-origin' })
  render(await res.json())
  const es = new EventSource('api/live')
  es.addEventListener('study', (e) => render(JSON.parse(e.data)))
}

main()
