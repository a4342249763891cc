'use strict'
// Shared helpers of the bot runtime: the process tick clock, angle conversions,
// logging to stderr, typed errors and abortable waits.

const { performance } = require('perf_hooks')

// Two clocks. The process clock (`clockMs`, performance.now() since start-up; monotonic,
// unlike Date.now()) times logs, deadlines and retries. The game clock (`tick`) is
// what every `tick` field reports: it runs only while a batch of programs plays
// (`gameClock.start()` / `gameClock.stop()` around run_programs), so time the
// controller spends between batches (models deciding, frames rendering) is not game
// time. It reads nothing from the server, so it behaves the same on the embedded and
// on an external server; see "Game clock" in docs/bridge-protocol.md.
const T0 = performance.now()
const MS_PER_TICK = 50

/** Milliseconds since start-up (process clock). */
function clockMs () {
  return performance.now() - T0
}

/**
 * The game clock counts physics steps. While a batch runs it is started with the
 * batch's bots ("clocked" bots: those with a program); each of them counts the
 * physics steps it simulates (mineflayer's `physicsTick`), and the clock stands at the
 * fewest steps any clocked bot has simulated since the batch began: tick t has passed
 * only once every clocked bot has simulated its step t. A stalled event loop stalls
 * mineflayer's physics and so the clock with it; the steps mineflayer then catches up
 * (at most a few per callback) are counted one by one, so no bot ever covers more
 * than one step of walking per tick. Every clocked bot's pose after each of its steps
 * is kept for the batch (`poseAt`), so samples and rule events read each bot where it
 * stood at that very tick, whichever bot has run ahead.
 *
 * With no clocked bot (a batch of no valid programs) the clock does not move.
 */
class GameClock {
  constructor () {
    this.base = 0 // ticks of the finished batches (and of meeting talk time)
    this.running = false
    this.clocked = new Map() // id -> { bot, steps, poses, listener, lastStepMs }
    this.lead = 0 // ticks this batch: the fewest steps of any clocked bot
    this.waiters = [] // { target, resolve }
    this.onTick = [] // functions called with each tick the clock reaches
    this.pauses = 0
    this.frozen = false
  }

  /** The current tick. */
  tick () {
    return this.base + this.lead
  }

  /**
   * Starts the clock for a batch.
   * @param {Map<string, object>} bots id -> mineflayer bot of every clocked bot
   */
  start (bots) {
    if (this.running) throw new BridgeError('bad_state', 'the game clock is already running')
    this.running = true
    this.lead = 0
    this.pauses = 0
    this.frozen = false
    this.waiters = [] // waits of programs that ended with an earlier batch
    for (const [id, bot] of bots) {
      if (!bot || !bot.entity) continue
      const entry = { bot, steps: 0, poses: [poseRow(bot.entity)], listener: null, lastStepMs: clockMs() }
      entry.listener = () => this._stepped(id, entry)
      bot.on('physicsTick', entry.listener)
      this.clocked.set(id, entry)
    }
  }

  _stepped (id, entry) {
    if (!this.running) return
    entry.steps++
    entry.poses.push(poseRow(entry.bot.entity))
    entry.lastStepMs = clockMs()
    this._recount()
  }

  /** Stops counting a bot (it disconnected): the clock no longer waits for it. */
  release (id) {
    const entry = this.clocked.get(id)
    if (!entry) return
    entry.bot.removeListener('physicsTick', entry.listener)
    this.clocked.delete(id)
    if (this.running) this._recount()
  }

  _recount () {
    if (this.frozen) return
    let lead = Infinity
    for (const e of this.clocked.values()) lead = Math.min(lead, e.steps)
    if (!Number.isFinite(lead)) return
    while (this.lead < lead) {
      this.lead++
      const t = this.tick()
      for (const fn of this.onTick) fn(t)
      const due = this.waiters.filter(w => w.target <= t)
      if (due.length) {
        this.waiters = this.waiters.filter(w => w.target > t)
        for (const w of due) w.resolve()
      }
    }
  }

  /** Resolves once the clock reaches `target` (never while it is stopped). */
  until (target) {
    return new Promise(resolve => this.at(target, resolve))
  }

  /**
   * Calls `fn` synchronously the moment the clock reaches `target`, before any further
   * step is counted. A promise from `until` settles only after the current callback:
   * when mineflayer catches up several physics steps in one callback (a busy event
   * loop), the clock may stand past `target` by then. A deadline must act on its own
   * tick, so it uses this.
   */
  at (target, fn) {
    if (this.tick() >= target) fn()
    else this.waiters.push({ target, resolve: fn })
  }

  /**
   * The pose row `[x, y, z, yaw, pitch]` of bot `id` at tick `t` of the running batch:
   * from its own step record when it is clocked, else where it stands now.
   */
  poseAt (id, t, bot) {
    const entry = this.clocked.get(id)
    const i = t - this.base
    // A bot that has simulated no step past `t` stands now as it did at `t` (instant
    // steps, a look, change its heading within the tick): read it live.
    if (entry && i >= 0 && i < entry.poses.length - 1) return entry.poses[i]
    const b = entry ? entry.bot : bot
    if (b && b.entity) return poseRow(b.entity)
    return entry ? entry.poses[entry.poses.length - 1] : null
  }

  /**
   * Holds physics (and so the clock) while the rules judge an event: no bot moves on
   * between a rule event and the rules' answer. Nested holds release with the last.
   */
  pause () {
    this.pauses++
    if (this.pauses === 1) {
      for (const e of this.clocked.values()) e.bot.physicsEnabled = false
    }
  }

  resume () {
    if (this.pauses === 0) return
    this.pauses--
    if (this.pauses === 0) {
      const now = clockMs()
      for (const e of this.clocked.values()) {
        e.bot.physicsEnabled = true
        e.lastStepMs = now // a hold is no stall
      }
    }
  }

  /** Clocked bots that simulated no step for `ms` while the clock waits for them. */
  stalled (ms) {
    if (this.pauses > 0 || this.frozen) return []
    const now = clockMs()
    return [...this.clocked.entries()].filter(([, e]) => e.steps === this.lead && now - e.lastStepMs > ms).map(([id]) => id)
  }

  /**
   * Moves a stopped clock forward by whole ticks (meeting talk time: every bot is
   * seated and no program runs, so no physics step has anything to simulate).
   */
  advance (ticks) {
    if (this.running) throw new BridgeError('bad_state', 'the game clock is running: advance it only between batches')
    if (!Number.isInteger(ticks) || ticks < 0) throw new BridgeError('bad_request', 'ticks must be a non-negative integer')
    this.base += ticks
  }

  /**
   * Fixes the clock on the tick it stands on for the rest of the batch (a meeting
   * froze it at its rule event's tick): the programs' unwinding is not game time.
   */
  freeze () {
    if (this.running) this.frozen = true
  }

  /** Stops the clock at the tick it stands on. */
  stop () {
    if (!this.running) return
    this.base = this.tick()
    this.lead = 0
    this.running = false
    for (const e of this.clocked.values()) {
      e.bot.removeListener('physicsTick', e.listener)
      e.bot.physicsEnabled = true
    }
    this.clocked.clear()
    this.pauses = 0
    this.frozen = false
  }
}

/** A bot entity's pose as `[x, y, z, yaw, pitch]` (protocol degrees, rounded). */
function poseRow (e) {
  const p = e.position
  return [round(p.x, 2), round(p.y, 2), round(p.z, 2), round(yawToProtocol(e.yaw), 1), round(pitchToProtocol(e.pitch), 1)]
}

const gameClock = new GameClock()

/** Current tick of the game clock (1 tick = 50 ms of batch time). */
function tick () {
  return gameClock.tick()
}

function log (...parts) {
  const text = parts.map(p => (p instanceof Error ? (p.stack || String(p)) : (typeof p === 'string' ? p : JSON.stringify(p)))).join(' ')
  process.stderr.write(`[bots ${(clockMs() / 1000).toFixed(2)}s tick=${tick()}] ${text}\n`)
}

/** An error whose `type` travels to Python as `error.type`. */
class BridgeError extends Error {
  constructor (type, message) {
    super(message)
    this.type = type
  }
}

// ---- angles -----------------------------------------------------------------
// Protocol yaw: degrees, Minecraft convention (0 = +Z south, 90 = -X west,
// 180 = -Z north, 270 = +X east); protocol pitch: degrees, positive looks down.
// Mineflayer: radians, yaw = PI - toRadians(mcYaw) (mod 2 PI), pitch = -toRadians(mcPitch).
// These are mineflayer's own conversions (lib/conversions.js), written out here
// so that both directions live in one place.

function normDeg (deg) {
  const r = deg % 360
  return r < 0 ? r + 360 : r
}

/** Mineflayer yaw (rad) -> protocol yaw (deg, [0, 360)). */
function yawToProtocol (rad) {
  return normDeg(180 - rad * 180 / Math.PI)
}

/** Mineflayer pitch (rad, up positive) -> protocol pitch (deg, down positive). */
function pitchToProtocol (rad) {
  return -rad * 180 / Math.PI
}

/** Protocol yaw (deg) -> mineflayer yaw (rad, [0, 2 PI)). */
function yawFromProtocol (deg) {
  const r = Math.PI - deg * Math.PI / 180
  const m = r % (2 * Math.PI)
  return m < 0 ? m + 2 * Math.PI : m
}

/** Protocol pitch (deg) -> mineflayer pitch (rad). */
function pitchFromProtocol (deg) {
  return -deg * Math.PI / 180
}

// ---- abortable waits --------------------------------------------------------

class Aborted extends Error {
  constructor (reason) {
    super(reason || 'aborted')
    this.name = 'Aborted'
  }
}

/** Races `promise` against `signal`; rejects with Aborted when the signal fires. */
function abortable (promise, signal) {
  if (!signal) return promise
  if (signal.aborted) {
    promise.catch(() => {})
    return Promise.reject(new Aborted(signal.reason?.message))
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new Aborted(signal.reason?.message))
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(v => {
      signal.removeEventListener('abort', onAbort)
      resolve(v)
    }, e => {
      signal.removeEventListener('abort', onAbort)
      reject(e)
    })
  })
}

function sleep (ms, signal) {
  let timer
  const p = new Promise(resolve => { timer = setTimeout(resolve, ms) })
  if (!signal) return p
  return abortable(p, signal).finally(() => clearTimeout(timer))
}

/**
 * Resolves once the game clock reached `target`. Only meaningful while the clock
 * runs (inside a batch); a stopped clock never gets there, so the wait then ends
 * only through `signal` (every batch aborts its waits when it ends).
 */
function sleepUntilTick (target, signal) {
  return abortable(gameClock.until(target), signal)
}

/** Polls `predicate` every `intervalMs` until true; rejects after `timeoutMs`. */
async function waitFor (predicate, timeoutMs, intervalMs = 50, what = 'condition', signal) {
  const deadline = clockMs() + timeoutMs
  while (true) {
    if (predicate()) return
    if (clockMs() > deadline) throw new BridgeError('timeout', `timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(intervalMs, signal)
  }
}

function round (x, digits = 4) {
  const f = 10 ** digits
  return Math.round(x * f) / f
}

module.exports = {
  MS_PER_TICK,
  GameClock,
  gameClock,
  poseRow,
  tick,
  clockMs,
  log,
  BridgeError,
  Aborted,
  abortable,
  sleep,
  sleepUntilTick,
  waitFor,
  normDeg,
  yawToProtocol,
  pitchToProtocol,
  yawFromProtocol,
  pitchFromProtocol,
  round
}
