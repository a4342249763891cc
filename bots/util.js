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
// `wallNow` is performance.now() as the runtime found it: while a bot's physics step
// runs, the physics driver below makes `performance.now()` read that bot's physics
// time, and the process clock must not follow it.
const wallNow = performance.now.bind(performance)
const OWN_NOW = Object.getOwnPropertyDescriptor(performance, 'now') // none on Node 20
const T0 = wallNow()
const MS_PER_TICK = 50

/** Milliseconds since start-up (process clock). */
function clockMs () {
  return wallNow() - T0
}

/**
 * The game clock counts physics steps. While a batch runs it is started with the
 * batch's bots ("clocked" bots: those with a program); each of them counts the
 * physics steps it simulates (mineflayer's `physicsTick`), and the clock stands at the
 * fewest steps any clocked bot has simulated since the batch began: tick t has passed
 * only once every clocked bot has simulated its step t. The physics scheduler below
 * steps every bot once per round and never a clocked bot that is ahead of the clock,
 * so the clock moves one tick per round, at the pace of the simulation speed, and a
 * busy event loop only makes the rounds come later: no bot ever covers more than one
 * step of walking per tick. Every clocked bot's pose after each of its steps is kept
 * for the batch (`poseAt`), so samples and rule events read each bot where it stood at
 * that very tick.
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
    this.scheduler = null // the PhysicsScheduler stepping the bots, told of every change
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
    this._wake()
  }

  /** Tells the physics scheduler that the clock's state changed (its pace follows it). */
  _wake () {
    if (this.scheduler) this.scheduler.wake()
  }

  /**
   * True when `bot` is clocked and has simulated more steps than the clock stands at:
   * it waits for the slowest bot.
   */
  ahead (bot) {
    for (const e of this.clocked.values()) if (e.bot === bot) return e.steps > this.lead
    return false
  }

  /** True while a batch's ticks are being played (running, neither frozen nor held). */
  playing () {
    return this.running && !this.frozen && this.pauses === 0
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
   * were several physics steps run in one callback, the clock could stand past
   * `target` by then. A deadline must act on its own tick, so it uses this.
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
   * between a rule event and the rules' answer (the scheduler plays no round while
   * held). Nested holds release with the last.
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
      this._wake()
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
    if (this.running) {
      this.frozen = true
      this._wake()
    }
  }

  /**
   * Puts a stopped clock back at tick 0, as a fresh runtime starts it (a warm server's
   * reset between games, bots/reset.js).
   */
  rewind () {
    if (this.running) throw new BridgeError('bad_state', 'the game clock is running: a batch is still playing')
    this.base = 0
    this.lead = 0
    this.waiters = []
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
    this._wake()
  }
}

/** A bot entity's pose as `[x, y, z, yaw, pitch]` (protocol degrees, rounded). */
function poseRow (e) {
  const p = e.position
  return [round(p.x, 2), round(p.y, 2), round(p.z, 2), round(yawToProtocol(e.yaw), 1), round(pitchToProtocol(e.pitch), 1)]
}

const gameClock = new GameClock()

// ---- the physics scheduler ----------------------------------------------------------
// Mineflayer steps each bot's physics on a timer of its own, every 50 ms of wall time
// (lib/plugins/physics.js: `doPhysics`, which runs as many 50 ms steps as have
// passed, at most 4 per call). The runtime takes that timer over (`physicsDriver`) and
// steps every bot from one scheduler instead, all bots in the same round, so no bot
// runs ahead of another. While a batch plays, rounds follow each other at the pace of
// the `speed` setting: 1 = real time (a round every 50 ms), N = N times real time,
// `max` = as soon as the previous round is through: its packets read by the embedded
// server, the server's updates read by every bot (`quiet`), and everything the round
// set off (programs, rule events) run. While the rules hold the clock no round runs;
// between batches (and while a frozen batch unwinds) the bots idle: a round every
// 50 ms, as mineflayer itself would step them.

/** A speed setting as a multiple of real time (`Infinity` for `max`); 1 if absent. */
function parseSpeed (speed) {
  if (speed === undefined || speed === null) return 1
  if (speed === 'max') return Infinity
  if (Number.isInteger(speed) && speed >= 1 && speed <= 1000) return speed
  throw new BridgeError('bad_request', `speed must be an integer 1..1000 or "max", got ${JSON.stringify(speed)}`)
}

const IDLE_MS = MS_PER_TICK
const CATCH_UP_ROUNDS = 4 // a late paced round is caught up, but never more than this many
const QUIET_CAP_MS = 20 // most wall time a round waits for the server's updates

class PhysicsScheduler {
  /**
   * @param {GameClock} clock the game clock whose batches set the pace
   * @param {object} [timers] the timer functions and clock to use (default: Node's)
   */
  constructor (clock, timers = {}) {
    this.clock = clock
    clock.scheduler = this
    this.speed = 1 // a multiple of real time; Infinity for `max`
    this.drivers = [] // { bot, step() } in join order
    this.quiet = null // () => boolean: the network between bots and server is idle
    this.handle = null
    this.due = 0 // process-clock ms of the next paced round
    this.pacing = false // the pending round is a batch round (paced by speed)
    this.timers = {
      setTimeout: timers.setTimeout || setTimeout,
      clearTimeout: timers.clearTimeout || clearTimeout,
      setImmediate: timers.setImmediate || setImmediate,
      clearImmediate: timers.clearImmediate || clearImmediate,
      now: timers.now || clockMs
    }
    this.stats = { rounds: 0, steps: 0, quiet_waits: 0, quiet_capped: 0, extra_steps: 0 }
  }

  /** Zeroes the diagnostic counters (`inspect`'s `physics`), as at start-up. */
  resetStats () {
    for (const key of Object.keys(this.stats)) this.stats[key] = 0
  }

  /** Sets the pace of batch rounds: an integer >= 1 or 'max'. */
  setSpeed (speed) {
    this.speed = parseSpeed(speed)
    this.wake()
  }

  /** The speed setting as the protocol writes it. */
  speedName () {
    return this.speed === Infinity ? 'max' : this.speed
  }

  /** Steps `driver.step()` once per round from now on (a bot that joined). */
  attach (driver) {
    if (!this.drivers.includes(driver)) this.drivers.push(driver)
    this.wake()
  }

  /** Stops stepping a driver (its bot left). */
  detach (driver) {
    this.drivers = this.drivers.filter(d => d !== driver)
  }

  /**
   * Re-plans the next round after a change of the clock's state: a batch that starts
   * or resumes gets its next round at once, a stopped or frozen one idles.
   */
  wake () {
    this._cancel()
    if (this.drivers.length === 0) return
    if (this.clock.playing()) {
      this.due = this.timers.now()
      this._next(true)
    } else if (this.clock.running && this.clock.pauses > 0) {
      // held for a rule event: no round until the clock resumes (resume wakes us)
    } else {
      this.due = this.timers.now() + IDLE_MS
      this._next(false)
    }
  }

  _cancel () {
    if (!this.handle) return
    if (this.handle.kind === 'timeout') this.timers.clearTimeout(this.handle.h)
    else this.timers.clearImmediate(this.handle.h)
    this.handle = null
  }

  /**
   * Schedules the next round: always after at least one turn of the event loop (the
   * programs' continuations and the sockets' I/O run between two rounds); a batch round
   * also waits for the network to be quiet, then for its due time.
   */
  _next (batch) {
    this.pacing = batch
    const since = this.timers.now()
    const check = () => {
      this.handle = null
      const now = this.timers.now()
      if (batch && this.quiet && !this.quiet()) {
        if (now - since < QUIET_CAP_MS) {
          this.stats.quiet_waits++
          this.handle = { kind: 'immediate', h: this.timers.setImmediate(check) }
          return
        }
        this.stats.quiet_capped++
      }
      const wait = this.due - now
      if (wait >= 1) {
        this.handle = { kind: 'timeout', h: this.timers.setTimeout(() => { this.handle = null; this._round() }, Math.floor(wait)) }
      } else {
        this._round()
      }
    }
    this.handle = { kind: 'immediate', h: this.timers.setImmediate(check) }
  }

  /** One round: every bot's physics steps once (a clocked bot ahead of the clock waits). */
  _round () {
    const clock = this.clock
    const batch = clock.playing()
    if (clock.running && clock.pauses > 0) return // held: resume() wakes the loop
    const before = clock.tick()
    for (const d of this.drivers.slice()) {
      if (clock.running && clock.pauses > 0) break // a rule event took hold mid-round
      if (batch && clock.ahead(d.bot)) continue
      const extra = d.step()
      this.stats.steps++
      if (extra > 0) this.stats.extra_steps += extra
    }
    this.stats.rounds++
    if (this.handle) return // a wake() during the round planned the next one
    if (batch && clock.playing() && clock.tick() > before) {
      const interval = this.speed === Infinity ? 0 : MS_PER_TICK / this.speed
      this.due = Math.max(this.due + interval, this.timers.now() - CATCH_UP_ROUNDS * interval)
      this._next(true)
    } else if (clock.running && clock.pauses > 0) {
      // held during the round: resume() wakes the loop
    } else {
      // idle, or a batch round that moved no clock (a clocked bot that cannot step
      // holds it, see `stalled`): the next round in 50 ms, as mineflayer would
      this.due = this.timers.now() + IDLE_MS
      this._next(clock.playing())
    }
  }
}

const physics = new PhysicsScheduler(gameClock)

/**
 * A mineflayer plugin that hands the bot's physics to `scheduler` (load it with
 * `bot.loadPlugin` right after `createBot`). When the bot logs in, mineflayer starts
 * its physics timer (`setInterval(doPhysics, 50)`); the plugin takes that function
 * instead and stops the timer. Each `step()` then calls `doPhysics` once with its own
 * time 50 ms later than the last (read by `doPhysics` through `performance.now()`),
 * which is exactly one physics step. For the rest of the step, `performance.now()`
 * reads that bot's physics time plus the wall time spent in the step, so what
 * mineflayer-pathfinder times across steps (its 3.5 s "stuck" limit, its 5 s of
 * thinking per path) is counted in physics steps, while its thinking within one step
 * (`tickTimeout`) is still wall time.
 * @param {PhysicsScheduler} scheduler
 */
function physicsDriver (scheduler) {
  return function mauPhysicsDriver (bot) {
    const realSetInterval = global.setInterval
    const driver = {
      bot,
      doPhysics: null,
      time: 0, // this bot's physics time (ms), one MS_PER_TICK per step
      stepsSeen: 0,
      step () {
        if (!driver.doPhysics) return 0
        const t = (driver.time += MS_PER_TICK)
        const start = wallNow()
        let first = true
        performance.now = () => {
          if (first) {
            first = false
            return t
          }
          return t + (wallNow() - start)
        }
        const seen = driver.stepsSeen
        try {
          driver.doPhysics()
        } finally {
          if (OWN_NOW) Object.defineProperty(performance, 'now', OWN_NOW)
          else delete performance.now
        }
        return Math.max(0, driver.stepsSeen - seen - 1)
      }
    }
    bot.on('physicsTick', () => { driver.stepsSeen++ })
    bot.driver = driver
    // Around mineflayer's own 'login' listener (the physics plugin, loaded before this
    // one), setInterval hands its doPhysics to the driver.
    bot.prependListener('login', () => {
      global.setInterval = function (fn, ms, ...rest) {
        if (typeof fn === 'function' && fn.name === 'doPhysics' && ms === MS_PER_TICK && !driver.doPhysics) {
          global.setInterval = realSetInterval
          const handle = realSetInterval(fn, ms, ...rest)
          clearInterval(handle) // mineflayer's own loop never runs; its cleanup clears it again
          // 1 ms past the time doPhysics was last called (just now): every step then
          // adds exactly one 50 ms step to its accumulator, and never two.
          driver.time = wallNow() + 1
          driver.doPhysics = fn
          scheduler.attach(driver)
          return handle
        }
        return realSetInterval.call(this, fn, ms, ...rest)
      }
    })
    bot.on('login', () => {
      global.setInterval = realSetInterval
      if (!driver.doPhysics) log('physics driver: mineflayer started no physics loop at login (mineflayer changed?); this bot has no physics')
    })
    bot.once('end', () => scheduler.detach(driver))
  }
}

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
  PhysicsScheduler,
  physics,
  physicsDriver,
  parseSpeed,
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
