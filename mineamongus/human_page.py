"""The page of a human seat (`mineamongus.human`): one self-contained HTML file.

It polls `GET /api/state` (what the seat's state view allows: the frame, the view
text, the modules with the action mask, each argument's options, the chat, the last
answer's outcome, and `place`: the seat's own position and task list), reads the
ship's map once from `GET /api/map`, and answers with
`POST /api/act {"question": ID, "action": {...}}`,
the action in the environment's form (`mineamongus.spaces`), sent as JSON from the
page's own origin with the token in the `X-Seat-Token` header, as the seat's server
requires. Every text the game supplies is set as text, never as markup (players type
the chat). Kept as a Python
string so that the wheel carries it without a package-data entry.

Element ids a test (or a person's own tooling) can rely on: `#modules
button[data-module=MOVE]`, the pickers `#target`, `#body`, `#station`, `#room`, the
line `#text`, the ballot `#ballot button[data-vote=N]`, `#send`, `#last`, `#chat`,
`#view`, `#frame`; the map `#map` (rooms `.room[data-room]`, the seat `#me` with
`data-x`, `data-z` and `data-room`, its tasks `.task[data-station][data-done]`) and the
task list `#tasks li[data-station][data-done]` with `#tasks-note`; `body` carries
`data-ready`, `data-status` (`asking`, `waiting`, `over`, `closed`), `data-question`,
`data-phase`, `data-step` and `data-map` (`1` once the map is drawn).
"""

from __future__ import annotations

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>MineAmongUs: your seat</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #15171c; color: #e8e8e8; }
  header { display: flex; gap: 1.5em; align-items: baseline; padding: .6em 1em;
           background: #23262e; }
  header h1 { font-size: 1.2em; margin: 0; }
  #status { font-weight: 600; }
  body[data-status=asking] #status { color: #ffd54a; }
  body[data-status=over] #status, body[data-status=closed] #status { color: #9ecbff; }
  main { display: grid; grid-template-columns: 660px 1fr; gap: 1em; padding: 1em; }
  #frame { width: 640px; height: 360px; background: #000; display: block; }
  #view { white-space: pre-wrap; background: #1d2027; padding: .6em; max-height: 420px;
          overflow: auto; font: 12px/1.35 ui-monospace, monospace; }
  #modules { display: grid; grid-template-columns: repeat(4, 1fr); gap: .4em; }
  #modules button { padding: .6em .2em; font-weight: 600; }
  button { background: #343946; color: #e8e8e8; border: 1px solid #4a5060;
           border-radius: 4px; cursor: pointer; }
  button:disabled { opacity: .35; cursor: not-allowed; }
  button.chosen { background: #3d6bd6; border-color: #6d94ff; }
  .picker { margin: .6em 0; display: none; }
  .picker.shown { display: block; }
  select, textarea { background: #1d2027; color: #e8e8e8; border: 1px solid #4a5060;
                     width: 100%; padding: .3em; box-sizing: border-box; }
  textarea { height: 4em; }
  #ballot { display: flex; flex-wrap: wrap; gap: .3em; }
  #send { margin-top: .6em; width: 100%; padding: .7em; font-size: 1.05em; }
  #last { margin-top: .5em; min-height: 1.4em; color: #b8c0cc; }
  #last.refused { color: #ff8a80; }
  #chat { list-style: none; padding: 0; max-height: 260px; overflow: auto;
          background: #1d2027; margin: 0; }
  #chat li { padding: .15em .5em; }
  #chat li.server { color: #9ecbff; font-style: italic; }
  h2 { font-size: 1em; margin: 1em 0 .3em; }
  #where { display: grid; grid-template-columns: 420px 1fr; gap: .8em; align-items: start; }
  #map { width: 420px; height: 300px; background: #0e0f12; display: block; }
  #map .room { fill: #2c3e50; stroke: #7f8c8d; stroke-width: .3; }
  #map .corridor { fill: #34495e; }
  #map .room.here { fill: #3d5a78; }
  #map .room-label { fill: #bdc3c7; font-size: 1.6px; text-anchor: middle; }
  #map .button { fill: #e74c3c; }
  #map .task { fill: #ffd54a; stroke: #000; stroke-width: .15; }
  #map .task[data-done="1"] { fill: #2ecc71; opacity: .55; }
  #map .task-label { fill: #fff; font-size: 1.3px; text-anchor: middle; }
  #map #me { stroke: #fff; stroke-width: .35; }
  #map .facing { stroke: #fff; stroke-width: .4; }
  #tasks { list-style: none; padding: 0; margin: 0; background: #1d2027; }
  #tasks li { padding: .15em .5em; }
  #tasks li[data-done="1"] { color: #7f8c8d; text-decoration: line-through; }
  #tasks li::before { content: "\25A1  "; }
  #tasks li[data-done="1"]::before { content: "\2713  "; color: #2ecc71; }
  #tasks-note { color: #b8c0cc; margin: .3em 0; }
</style>
</head>
<body data-ready="0" data-status="" data-question="" data-phase="" data-step="">
<header>
  <h1 id="who">Connecting...</h1>
  <div id="status"></div>
  <div id="clock"></div>
</header>
<main>
  <section>
    <img id="frame" alt="first-person view" hidden>
    <h2>Map <span id="here"></span></h2>
    <div id="where">
      <svg id="map" xmlns="http://www.w3.org/2000/svg" aria-label="map of the ship"></svg>
      <div>
        <h2 style="margin-top:0">Your tasks</h2>
        <p id="tasks-note"></p>
        <ul id="tasks"></ul>
      </div>
    </div>
    <h2>What you know</h2>
    <pre id="view"></pre>
  </section>
  <section>
    <h2>Decision module</h2>
    <div id="modules"></div>
    <div class="picker" data-for="target"><label>Target <select id="target"></select></label></div>
    <div class="picker" data-for="body"><label>Body <select id="body"></select></label></div>
    <div class="picker" data-for="station"><label>Station
      <select id="station"></select></label></div>
    <div class="picker" data-for="room"><label>Room <select id="room"></select></label></div>
    <div class="picker" data-for="text"><label>Your line (empty passes)
      <textarea id="text" maxlength="256"></textarea></label></div>
    <div class="picker" data-for="vote"><div>Ballot</div><div id="ballot"></div></div>
    <button id="send" disabled>Send</button>
    <div id="last"></div>
    <h2>Chat</h2>
    <ol id="chat"></ol>
  </section>
</main>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
const cap = (s) => s ? s.charAt(0).toUpperCase() + s.slice(1) : "";
let shown = null;     // id of the question on screen
let modules = [];     // that question's modules
let chosen = null;    // the chosen module
let ballot = null;    // the chosen ballot value
let chatCount = -1;
const sent = new Set();  // questions answered from this page
let ship = null;         // the map (GET /api/map), once
let placeShown = "";     // the place drawn last (as JSON)
const SVGNS = "http://www.w3.org/2000/svg";
const COLOURS = {
  red: "#d32f2f", blue: "#1e5cff", green: "#1b8a3a", pink: "#f06fb0",
  orange: "#f57c00", yellow: "#f5d000", black: "#3a3a3a", white: "#f5f5f5"
};

// Same-origin only, the token in a header, answers as JSON: the seat's server refuses
// anything else (mineamongus.human.seat_refusal).
async function api(path, body) {
  const init = { headers: { "X-Seat-Token": token }, mode: "same-origin",
                 credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  return [res.status, await res.json()];
}

function fill(select, options) {
  select.replaceChildren();
  let first = null;
  for (const o of options) {
    const opt = document.createElement("option");
    opt.value = String(o.value);
    opt.textContent = o.label;
    opt.disabled = !o.allowed;
    if (o.allowed && first === null) first = opt.value;
    select.appendChild(opt);
  }
  if (first !== null) select.value = first;
}

function argumentOf(name) {
  const m = modules.find((x) => x.name === name);
  return m ? m.argument : null;
}

function canSend() {
  if (shown === null || chosen === null) return false;
  const arg = argumentOf(chosen);
  if (arg === "vote") return ballot !== null;
  if (arg && arg !== "text") return $(arg).value !== "";
  return true;
}

function choose(name) {
  chosen = name;
  for (const b of $("modules").children) b.classList.toggle("chosen", b.dataset.module === name);
  const arg = argumentOf(name);
  for (const p of document.querySelectorAll(".picker")) {
    p.classList.toggle("shown", p.dataset.for === arg);
  }
  if (arg === "text") $("text").focus();
  $("send").disabled = !canSend();
}

function showQuestion(q) {
  shown = q.id;
  chosen = null;
  ballot = null;
  modules = q.modules;
  document.body.dataset.question = String(q.id);
  document.body.dataset.phase = q.phase;
  document.body.dataset.step = String(q.step);
  $("view").textContent = q.view;
  const frame = $("frame");
  if (q.frame) {
    frame.src = "/api/frame/" + q.id + "?token=" + encodeURIComponent(token);
    frame.hidden = false;
  } else {
    frame.hidden = true;
    frame.removeAttribute("src");
  }
  const box = $("modules");
  box.replaceChildren();
  for (const m of q.modules) {
    const b = document.createElement("button");
    b.textContent = m.name;
    b.dataset.module = m.name;
    b.disabled = !m.allowed;
    b.addEventListener("click", () => choose(m.name));
    box.appendChild(b);
  }
  for (const key of ["target", "body", "station", "room"]) fill($(key), q.options[key]);
  const ballotBox = $("ballot");
  ballotBox.replaceChildren();
  for (const o of q.options.vote) {
    const b = document.createElement("button");
    b.textContent = o.label;
    b.dataset.vote = String(o.value);
    b.disabled = !o.allowed;
    b.addEventListener("click", () => {
      ballot = o.value;
      for (const x of ballotBox.children) x.classList.toggle("chosen", x === b);
      $("send").disabled = !canSend();
    });
    ballotBox.appendChild(b);
  }
  $("text").value = "";
  $("text").maxLength = q.max_text;
  for (const p of document.querySelectorAll(".picker")) p.classList.remove("shown");
  const allowed = q.modules.filter((m) => m.allowed);
  if (allowed.length === 1 && (q.phase === "meeting" || q.phase === "voting")) {
    choose(allowed[0].name);
  }
  $("send").disabled = !canSend();
}

function clearQuestion() {
  shown = null;
  chosen = null;
  document.body.dataset.question = "";
  for (const b of document.querySelectorAll("#modules button, #ballot button")) b.disabled = true;
  $("send").disabled = true;
}

function showChat(lines) {
  if (lines.length === chatCount) return;
  chatCount = lines.length;
  const list = $("chat");
  list.replaceChildren();
  for (const c of lines) {
    const li = document.createElement("li");
    li.className = c.kind;
    li.textContent = (c.kind === "speech" ? cap(c.speaker) + ": " : "") + c.text;
    list.appendChild(li);
  }
  list.scrollTop = list.scrollHeight;
}

function svg(tag, attrs, parent) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (parent) parent.appendChild(el);
  return el;
}

// The ship from above: rooms, corridors and the button (x east, z down the page).
function drawShip(m) {
  const el = $("map");
  el.replaceChildren();
  if (!m.rooms || !m.rooms.length) return;
  let x0 = Infinity, z0 = Infinity, x1 = -Infinity, z1 = -Infinity;
  for (const r of [...m.rooms, ...m.corridors]) {
    x0 = Math.min(x0, r.rect.x0); z0 = Math.min(z0, r.rect.z0);
    x1 = Math.max(x1, r.rect.x1 + 1); z1 = Math.max(z1, r.rect.z1 + 1);
  }
  el.setAttribute("viewBox", `${x0 - 2} ${z0 - 2} ${x1 - x0 + 4} ${z1 - z0 + 4}`);
  const box = (r) => ({ x: r.x0, y: r.z0, width: r.x1 - r.x0 + 1, height: r.z1 - r.z0 + 1 });
  for (const c of m.corridors) svg("rect", { class: "corridor", ...box(c.rect) }, el);
  for (const r of m.rooms) {
    svg("rect", { class: "room", "data-room": r.name, ...box(r.rect) }, el);
    const t = svg("text", { class: "room-label", x: (r.rect.x0 + r.rect.x1 + 1) / 2,
                            y: (r.rect.z0 + r.rect.z1 + 1) / 2 }, el);
    t.textContent = r.name.replaceAll("_", " ");
  }
  svg("rect", { class: "button", x: m.button[0] + 0.1, y: m.button[1] + 0.1,
                width: 0.8, height: 0.8 }, el);
  svg("g", { id: "map-tasks" }, el);
  svg("g", { id: "map-me" }, el);
  document.body.dataset.map = "1";
}

// The seat's own position and tasks (what its observation holds), on the map and listed.
function drawPlace(seat, role, p) {
  const key = JSON.stringify([role, p]);
  if (!p || !ship || key === placeShown) return;
  placeShown = key;
  $("here").textContent = "· you are in " + p.room.replaceAll("_", " ");
  for (const r of document.querySelectorAll("#map .room")) {
    r.classList.toggle("here", r.dataset.room === p.room);
  }
  const tasks = $("map-tasks");
  tasks.replaceChildren();
  const list = $("tasks");
  list.replaceChildren();
  for (const t of p.tasks) {
    const done = t.done ? "1" : "0";
    svg("rect", { class: "task", "data-station": t.station, "data-done": done,
                  x: t.cell[0] + 0.1, y: t.cell[1] + 0.1, width: 0.8, height: 0.8 }, tasks);
    const label = svg("text", { class: "task-label", x: t.cell[0] + 0.5,
                                y: t.cell[1] - 0.3 }, tasks);
    label.textContent = String(t.station);
    const li = document.createElement("li");
    li.dataset.station = String(t.station);
    li.dataset.done = done;
    li.textContent = `${t.name} · station ${t.station} in ${t.room.replaceAll("_", " ")}` +
      (t.done ? " (done)" : "");
    list.appendChild(li);
  }
  const left = p.tasks.filter((t) => !t.done).length;
  $("tasks-note").textContent = role === "impostor" && !p.tasks.length
    ? "Impostors are given no tasks."
    : p.tasks.length ? `${left} of ${p.tasks.length} to do` : "No tasks.";
  const me = $("map-me");
  me.replaceChildren();
  const [x, , z] = p.pos;
  const yaw = (p.yaw || 0) * Math.PI / 180;
  svg("line", { class: "facing", x1: x, y1: z, x2: x - Math.sin(yaw) * 2.2,
                y2: z + Math.cos(yaw) * 2.2 }, me);
  const dot = svg("circle", { id: "me", cx: x, cy: z, r: 0.9, fill: COLOURS[seat] || "#888",
                              "data-x": x, "data-z": z, "data-room": p.room }, me);
  svg("title", {}, dot).textContent = "you";
}

async function loadShip() {
  const [code, m] = await api("/api/map");
  if (code !== 200) return;
  ship = m;
  drawShip(m);
}

function render(s) {
  document.body.dataset.status = s.status;
  $("who").textContent = cap(s.seat) + (s.role ? ", " + s.role : "") +
    (s.teammates.length ? " (fellow impostors: " + s.teammates.map(cap).join(", ") + ")" : "");
  const last = $("last");
  if (s.last) {
    last.textContent = s.last.message;
    last.classList.toggle("refused", Boolean(s.last.refused));
  }
  showChat(s.chat);
  drawPlace(s.seat, s.role, s.place);
  if (s.status === "over") {
    const r = s.result;
    $("status").textContent = r.status === "ok"
      ? "Game over: " + (r.winner || "nobody") + " won (" + r.ending + ")"
      : "Game over: invalid (" + r.reason + ")";
    $("clock").textContent = "";
    clearQuestion();
    return;
  }
  const q = s.question;
  if (!q) {
    $("status").textContent = "Waiting for the game...";
    $("clock").textContent = "";
    if (shown !== null) clearQuestion();
    return;
  }
  $("status").textContent = q.phase === "meeting" ? "Your turn to speak"
    : q.phase === "voting" ? "Cast your vote" : "Your move";
  $("clock").textContent = q.seconds_left !== undefined
    ? Math.ceil(q.seconds_left) + " s left" : "";
  if (sent.has(q.id)) {
    $("status").textContent = "Sent; waiting for the game...";
  } else if (q.id !== shown) {
    showQuestion(q);
  }
}

async function send() {
  if (!canSend()) return;
  const action = { module: chosen };
  const arg = argumentOf(chosen);
  if (arg === "text") action.text = $("text").value;
  else if (arg === "vote") action.vote = ballot;
  else if (arg) action[arg] = Number($(arg).value);
  const question = shown;
  sent.add(question);
  clearQuestion();
  try {
    const [code, reply] = await api("/api/act", { question, action });
    $("last").textContent = reply.message;
    $("last").classList.toggle("refused", code !== 200 || Boolean(reply.refused));
  } catch (err) {
    $("last").textContent = "could not send: " + err;
  }
}

$("send").addEventListener("click", send);
for (const key of ["target", "body", "station", "room"]) {
  $(key).addEventListener("change", () => { $("send").disabled = !canSend(); });
}

async function poll() {
  try {
    const [code, s] = await api("/api/state");
    if (code !== 200) {
      $("status").textContent = s.message;
      document.body.dataset.status = "denied";
    } else {
      if (ship === null) await loadShip();
      render(s);
    }
    document.body.dataset.ready = "1";
  } catch (err) {
    document.body.dataset.status = "closed";
    $("status").textContent = "The seat's page has closed (the game has ended or stopped).";
    clearQuestion();
  }
  setTimeout(poll, 300);
}
poll();
</script>
</body>
</html>
"""
