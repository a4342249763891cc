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

class GameClock {
  constructor () {
    this.baseMs = 0 // game time accumulated by finished batches
    this.since = null // process-clock ms when the running batch started, or null
  }

  get running () {
    return this.since !== null
  }

  /** Game milliseconds so far. */
  ms () {
    return this.baseMs + (this.since === null ? 0 : clockMs() - this.since)
  }

  tick () {
    return Math.floor(this.ms() / MS_PER_TICK)
  }

  start () {
    if (this.since !== null) throw new BridgeError('bad_state', 'the game clock is already running')
    this.since = clockMs()
  }

  /**
   * Moves a stopped clock forward by whole ticks (meeting talk time: every bot is
   * seated and no program runs, so no physics step has anything to simulate).
   */
  advance (ticks) {
    if (this.since !== null) throw new BridgeError('bad_state', 'the game clock is running: advance it only between batches')
    if (!Number.isInteger(ticks) || ticks < 0) throw new BridgeError('bad_request', 'ticks must be a non-negative integer')
    this.baseMs = (this.tick() + ticks) * MS_PER_TICK
  }

  /**
   * Stops the clock on a whole tick (the fraction of the last tick is dropped, so
   * the next batch starts on the tick this one reported as its end).
   */
  stop () {
    if (this.since === null) return
    this.baseMs = this.tick() * MS_PER_TICK
    this.since = null
  }
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
async function sleepUntilTick (target, signal) {
  while (gameClock.tick() < target) {
    const ms = gameClock.running ? target * MS_PER_TICK - gameClock.ms() : MS_PER_TICK
    await sleep(Math.max(1, ms), signal)
  }
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
