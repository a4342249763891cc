'use strict'
// Shared helpers of the bot runtime: the process tick clock, angle conversions,
// logging to stderr, typed errors and abortable waits.

const { performance } = require('perf_hooks')

// One monotonic clock for the whole process: every `tick` field uses it.
// performance.now() is monotonic (Date.now() can jump with the wall clock).
const T0 = performance.now()
const MS_PER_TICK = 50

/** Current tick of the process clock (1 tick = 50 ms since start-up). */
function tick () {
  return Math.floor((performance.now() - T0) / MS_PER_TICK)
}

/** Milliseconds since start-up on the same clock as tick(). */
function clockMs () {
  return performance.now() - T0
}

function log (...parts) {
  const text = parts.map(p => (p instanceof Error ? (p.stack || String(p)) : (typeof p === 'string' ? p : JSON.stringify(p)))).join(' ')
  process.stderr.write(`[bots t=${tick()}] ${text}\n`)
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

/** Resolves once tick() >= target (the process clock, not a bot's physics ticks). */
function sleepUntilTick (target, signal) {
  const ms = (target * MS_PER_TICK) - clockMs()
  return sleep(Math.max(0, ms), signal)
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
