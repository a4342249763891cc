'use strict'
// run_programs: validation of low-level steps (controller/protocol.py shapes) and
// their concurrent execution, one step loop per bot, with real cancellation.

const fs = require('fs')
const path = require('path')
const { goals } = require('mineflayer-pathfinder')
const { Vec3 } = require('vec3')
const {
  Aborted, BridgeError, abortable, gameClock, log, sleep, sleepUntilTick, tick, round,
  yawToProtocol, yawFromProtocol, pitchFromProtocol, pitchToProtocol
} = require('./util')

// goto's success radius is never below this (a bot cannot stand exactly on a point).
const MIN_GOTO_RANGE = 0.3
// A path node is a block; the bot ends up near its centre. Node-level goal checks
// allow this much slack, the last stretch is walked in a straight line ("nudge").
const NODE_SLACK = 0.75
const NUDGE_MAX_TICKS = 60
// goto re-plans when the bot has not moved for this many of its physics steps
// (pathfinder stuck): 2 s of game time.
const STALL_STEPS = 40
const GOTO_ATTEMPTS = 3
// After an abort, how long to wait for the step loop to unwind before answering.
const UNWIND_MS = 1000
// How long a program waits for the controller's directive on one of its rule events
// before it fails (a live controller answers within a few ms; benchmarks/arbiter.py).
const DIRECTIVE_TIMEOUT_MS = 30000
// A clocked bot that simulates no physics step for this long no longer holds the clock.
const STALL_RELEASE_MS = 3000
// Milliseconds of game time per tick: a program's `timeout_ms` is counted in ticks.
const TICK_MS = 50
// A program still running after this many times its `timeout_ms` of wall time is ended
// whatever the clock says (its reason begins "wall guard").
const WALL_GUARD_FACTOR = 4

class StepFailed extends Error {}

// ---- validation ----------------------------------------------------------------------

const isNum = (v) => typeof v === 'number' && Number.isFinite(v)
const isInt = (v) => Number.isInteger(v)

// Field checkers: [predicate, description]; a field given as [checker, default] is optional.
const F = {
  vec3: [(v) => Array.isArray(v) && v.length === 3 && v.every(isNum), 'a list of 3 finite numbers'],
  num: [isNum, 'a finite number'],
  numGe0: [(v) => isNum(v) && v >= 0, 'a number >= 0'],
  numGt0: [(v) => isNum(v) && v > 0, 'a number > 0'],
  intGe0: [(v) => isInt(v) && v >= 0, 'an integer >= 0'],
  intGe1: [(v) => isInt(v) && v >= 1, 'an integer >= 1'],
  str: [(v) => typeof v === 'string', 'a string'],
  agent: [(v) => typeof v === 'string' && v.length > 0, 'an agent id'],
  // Checked further by checkChat (the rules shared with Python).
  chat: [(v) => typeof v === 'string', 'a string']
}

// ---- chat lines: one rule file for Python (world/chat.py) and Node ----------------------

const CHAT_RULES = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'world', 'chat_rules.json'), 'utf8'))
const CHAT_WS = new RegExp(CHAT_RULES.whitespace, 'gu')
const CHAT_FORBIDDEN = new RegExp(CHAT_RULES.forbidden, 'u')

/**
 * Normalises a chat line (whitespace runs -> one space, ends trimmed) and checks it
 * exactly as world/chat.py does; string length is in UTF-16 units on both sides.
 * @returns {string} the normalised line
 * @throws {Error} naming the broken rule
 */
function checkChat (text) {
  const line = text.replace(CHAT_WS, ' ').replace(/^ +| +$/g, '')
  if (!line) throw new Error('chat line is empty (after whitespace is normalised)')
  if (line.length > CHAT_RULES.max_length) throw new Error(`chat line is ${line.length} characters (UTF-16 units) long; at most ${CHAT_RULES.max_length}`)
  const bad = CHAT_FORBIDDEN.exec(line)
  if (bad) throw new Error(`chat line contains a forbidden character U+${bad[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0')} (no control characters, no section sign)`)
  if (line.startsWith(CHAT_RULES.forbidden_start)) throw new Error(`chat line may not start with '${CHAT_RULES.forbidden_start}' (it would run a command)`)
  return line
}

const SPECS = {
  goto: { pos: F.vec3, range: [F.numGe0, 1.0] },
  follow: { agent: F.agent, distance: [F.numGt0, 3.0], ticks: F.intGe1 },
  approach: { agent: F.agent, range: F.numGt0, leash: [F.numGt0, null] },
  look: { yaw: F.num, pitch: [F.num, 0.0] },
  turn: { yaw: F.num },
  wait: { ticks: F.intGe0 },
  chat: { text: F.chat },
  mark: { tag: F.str }
}

/**
 * Checks one step against its shape; returns a normalised copy (defaults filled in).
 * @throws {Error} with a human-readable reason
 */
function validateStep (step, index, selfId, knownIds) {
  const where = `step ${index}`
  if (!step || typeof step !== 'object' || Array.isArray(step)) throw new Error(`${where}: must be an object`)
  const spec = SPECS[step.op]
  if (!spec) throw new Error(`${where}: unknown op ${JSON.stringify(step.op)} (expected one of ${Object.keys(SPECS).join(', ')})`)
  const out = { op: step.op }
  for (const key of Object.keys(step)) {
    if (key !== 'op' && !(key in spec)) throw new Error(`${where} (${step.op}): unexpected field ${JSON.stringify(key)}`)
  }
  for (const [key, def] of Object.entries(spec)) {
    const optional = Array.isArray(def[0])
    const [check, desc] = optional ? def[0] : def
    const value = step[key]
    if (value === undefined || (optional && value === null)) {
      if (!optional) throw new Error(`${where} (${step.op}): missing field ${JSON.stringify(key)}`)
      out[key] = def[1]
      continue
    }
    if (!check(value)) throw new Error(`${where} (${step.op}): ${key} must be ${desc}, got ${JSON.stringify(value)}`)
    out[key] = value
  }
  if (step.op === 'chat') {
    try {
      out.text = checkChat(out.text)
    } catch (err) {
      throw new Error(`${where} (chat): ${err.message}`)
    }
  }
  if (out.agent !== undefined) {
    if (out.agent === selfId) throw new Error(`${where} (${step.op}): a bot cannot ${step.op} itself`)
    if (!knownIds.has(out.agent)) throw new Error(`${where} (${step.op}): unknown agent ${JSON.stringify(out.agent)}`)
  }
  return out
}

function validateProgram (steps, selfId, knownIds) {
  if (!Array.isArray(steps)) throw new Error('program must be a list of steps')
  return steps.map((s, i) => validateStep(s, i, selfId, knownIds))
}

// ---- execution -----------------------------------------------------------------------

const posOf = (bot) => {
  const p = bot.entity.position
  return [round(p.x), round(p.y), round(p.z)]
}

/** Stops everything a bot may be doing on its own: path, goal, movement keys. */
function stopBot (bot) {
  if (!bot) return
  try {
    if (bot.pathfinder) bot.pathfinder.setGoal(null)
  } catch (err) { log('setGoal(null) failed', err) }
  try { bot.clearControlStates() } catch (err) { log('clearControlStates failed', err) }
  // No sliding on: a stopped bot (a program's end, a kill, a meeting) stays where its
  // last pose was reported. Falling (y) is left to physics.
  const v = bot.entity && bot.entity.velocity
  if (v) {
    v.x = 0
    v.z = 0
  }
}

/** Goal: stand on a block whose centre is within `radius` of `target` (3-D). */
class GoalWithin extends goals.Goal {
  constructor (target, radius) {
    super()
    this.target = target
    this.radiusSq = radius * radius
    // Pathfinder helpers read x/y/z of goals (e.g. for debug drawing).
    this.x = Math.floor(target.x)
    this.y = Math.floor(target.y)
    this.z = Math.floor(target.z)
  }

  // Nodes are block positions, but mineflayer-pathfinder 2.4.5 moves the nodes of a
  // partial path to block centres in place (postProcessPath) and then keeps expanding
  // them: floor first, or a node already at x + 0.5 would count as x + 1.
  heuristic (node) {
    const dx = this.target.x - (Math.floor(node.x) + 0.5)
    const dz = this.target.z - (Math.floor(node.z) + 0.5)
    return Math.sqrt(dx * dx + dz * dz) + Math.abs(this.target.y - Math.floor(node.y))
  }

  isEnd (node) {
    const dx = this.target.x - (Math.floor(node.x) + 0.5)
    const dy = this.target.y - Math.floor(node.y)
    const dz = this.target.z - (Math.floor(node.z) + 0.5)
    return dx * dx + dy * dy + dz * dz <= this.radiusSq
  }
}

function pathError (name, message) {
  return Object.assign(new Error(message), { name })
}

/**
 * Sets `goal` and settles when the pathfinder reaches it (resolves) or gives it up
 * (rejects with NoPath, Timeout, GoalChanged or PathStopped), as mineflayer-
 * pathfinder's own `goto` does, but without its wall-clock timer: it settles when the
 * physics step that decided it is over, so the next step of a program starts on the
 * same tick at any simulation speed.
 */
function walkTo (bot, goal) {
  return new Promise((resolve, reject) => {
    const listeners = {
      goal_reached: () => finish(null),
      path_update: (results) => {
        // an empty path: nothing left to walk (the caller measures where it stands)
        if (results.path.length === 0) finish(null)
        else if (results.status === 'noPath') finish(pathError('NoPath', 'no path to the goal'))
        else if (results.status === 'timeout') finish(pathError('Timeout', 'the pathfinder ran out of thinking time'))
      },
      goal_updated: (newGoal) => {
        if (newGoal !== goal) finish(pathError('GoalChanged', 'the goal changed before it was reached'))
      },
      path_stop: () => finish(pathError('PathStopped', 'the path was stopped before the goal'))
    }
    function finish (err) {
      for (const [name, fn] of Object.entries(listeners)) bot.removeListener(name, fn)
      if (err) reject(err)
      else resolve()
    }
    for (const [name, fn] of Object.entries(listeners)) bot.on(name, fn)
    bot.pathfinder.setGoal(goal)
  })
}

function waitPhysicsTicks (bot, n, signal) {
  return abortable(bot.waitForTicks(n), signal)
}

/**
 * Walks straight at `target` until within `tol` (3-D, feet) and settled there.
 * @returns {Promise<boolean>}
 */
async function nudge (bot, target, tol, signal) {
  try {
    for (let i = 0; i < NUDGE_MAX_TICKS; i++) {
      const p = bot.entity.position
      if (p.distanceTo(target) <= tol) {
        bot.clearControlStates()
        await waitPhysicsTicks(bot, 3, signal) // let momentum die out, then re-check
        if (bot.entity.position.distanceTo(target) <= tol) return true
        continue
      }
      const dx = target.x - p.x
      const dz = target.z - p.z
      const dh = Math.sqrt(dx * dx + dz * dz)
      if (dh < 0.05) return false // only the height differs: walking cannot fix it
      await bot.look(Math.atan2(-dx, -dz), 0, true)
      bot.setControlState('sprint', false)
      bot.setControlState('sneak', dh < 1.0) // slow down for the last block
      bot.setControlState('forward', true)
      await waitPhysicsTicks(bot, 1, signal)
    }
    return bot.entity.position.distanceTo(target) <= tol
  } finally {
    bot.clearControlStates()
  }
}

class ProgramRunner {
  constructor (fleet) {
    this.fleet = fleet
    this.batch = null // the running batch: {id, arbiter, controllers, waiting, seq, frozen}
    this.batches = 0
  }

  /** The live entity of another agent as `bot` sees it, or null. */
  targetEntity (bot, targetAgent) {
    if (!targetAgent.connected) return null
    const info = bot.players[targetAgent.username]
    return (info && info.entity && info.entity.isValid !== false) ? info.entity : null
  }

  async execStep (agent, step, signal, events) {
    const bot = agent.bot
    switch (step.op) {
      case 'goto': return this.execGoto(bot, step, signal)
      case 'follow': return this.execFollow(agent, step, signal)
      case 'approach': return this.execApproach(agent, step, signal, events)
      // Instant (no game time): the heading changes at once for this bot; the server
      // and the other players learn it with the next physics tick (<= 50 ms).
      case 'look':
        await bot.look(yawFromProtocol(step.yaw), pitchFromProtocol(step.pitch), true)
        return
      case 'turn': {
        const yaw = yawToProtocol(bot.entity.yaw) + step.yaw
        await bot.look(yawFromProtocol(yaw), bot.entity.pitch, true)
        return
      }
      case 'wait':
        return sleepUntilTick(tick() + step.ticks, signal)
      case 'chat':
        bot.chat(step.text)
        events.push({ kind: 'chat', tick: tick(), pos: posOf(bot), text: step.text })
        return
      case 'mark':
        return this.ruleEvent(agent, { kind: 'mark', tick: tick(), pos: posOf(bot), tag: step.tag }, events, signal)
      default:
        throw new StepFailed(`unknown op ${step.op}`)
    }
  }

  async execGoto (bot, step, signal) {
    const target = new Vec3(step.pos[0], step.pos[1], step.pos[2])
    const tol = Math.max(step.range, MIN_GOTO_RANGE)
    const dist = () => bot.entity.position.distanceTo(target)
    if (dist() <= tol) return
    // Node centres within this radius leave at most ~0.5 block to the real position.
    const radius = Math.max(tol - 0.5, NODE_SLACK)
    for (let attempt = 1; ; attempt++) {
      const stalled = await this.pathfindWithWatchdog(bot, new GoalWithin(target, radius), signal, step)
      if (dist() <= tol) return
      // Arrived by the pathfinder's measure, or stuck close by: walk the last bit.
      if (dist() <= tol + NODE_SLACK + 1.0 && await nudge(bot, target, tol, signal)) return
      if (!stalled || attempt >= GOTO_ATTEMPTS) break
      log(`goto ${step.pos}: no progress at ${bot.entity.position}; re-planning (attempt ${attempt + 1})`)
    }
    throw new StepFailed(`goto ${step.pos}: stopped ${dist().toFixed(2)} blocks away (range ${tol})`)
  }

  /**
   * Walks to `goal` with the pathfinder and a watchdog: if the bot makes no progress
   * for STALL_STEPS of its physics steps while the goal is set, the goal is dropped.
   * Resolves true if stalled. Everything here counts physics steps, never wall time,
   * so a walk goes the same at any simulation speed.
   */
  async pathfindWithWatchdog (bot, goal, signal, step) {
    let stalled = false
    let lastPos = bot.entity.position.clone()
    let still = 0
    const onStep = () => {
      const p = bot.entity.position
      if (p.distanceTo(lastPos) > 0.2) {
        lastPos = p.clone()
        still = 0
      } else if (++still > STALL_STEPS && bot.pathfinder.goal === goal) {
        stalled = true
        bot.pathfinder.setGoal(null) // ends the walk with GoalChanged
      }
    }
    bot.on('physicsTick', onStep)
    try {
      await abortable(walkTo(bot, goal), signal)
    } catch (err) {
      if (err instanceof Aborted) throw err
      if (!stalled) throw new StepFailed(`goto ${step.pos}: ${err.name === 'NoPath' ? 'no path' : err.message}`)
    } finally {
      bot.removeListener('physicsTick', onStep)
    }
    return stalled
  }

  async execFollow (agent, step, signal) {
    const bot = agent.bot
    const target = this.fleet.agents.get(step.agent)
    const end = tick() + step.ticks
    let entity = this.targetEntity(bot, target)
    if (!entity) throw new StepFailed(`follow: ${step.agent} is not visible (disconnected or out of range)`)
    bot.pathfinder.setGoal(new goals.GoalFollow(entity, step.distance), true)
    try {
      while (tick() < end) {
        await sleepUntilTick(tick() + 1, signal)
        const now = this.targetEntity(bot, target)
        if (!now) throw new StepFailed(`follow: ${step.agent} is gone`)
        if (now !== entity) { // re-joined: a new entity object
          entity = now
          bot.pathfinder.setGoal(new goals.GoalFollow(entity, step.distance), true)
        }
      }
    } finally {
      stopBot(bot)
    }
  }

  async execApproach (agent, step, signal, events) {
    const bot = agent.bot
    const target = this.fleet.agents.get(step.agent)
    let entity = this.targetEntity(bot, target)
    if (!entity) throw new StepFailed(`approach: ${step.agent} is not visible (disconnected or out of range)`)
    const inRange = (e) => bot.entity.position.distanceTo(e.position) <= step.range
    // The leash: give up once the target is farther than this from where the approach
    // began, so a strike never lands far from the place the killer judged safe.
    const anchor = bot.entity.position.clone()
    const checkLeash = (e) => {
      if (step.leash === null) return
      const away = anchor.distanceTo(e.position)
      if (away > step.leash) throw new StepFailed(`approach: ${step.agent} is ${away.toFixed(1)} blocks from where the approach began, beyond its leash of ${step.leash}`)
    }
    checkLeash(entity)
    // The goal range is a bit tighter than the step's: free motion stops at the goal
    // range measured between real positions, which is then surely within step.range.
    const goalRange = step.range * 0.75
    try {
      if (!inRange(entity)) {
        bot.pathfinder.setGoal(new goals.GoalFollow(entity, goalRange), true)
        while (true) {
          await sleepUntilTick(tick() + 1, signal)
          const now = this.targetEntity(bot, target)
          if (!now) throw new StepFailed(`approach: ${step.agent} is gone`)
          if (now !== entity) {
            entity = now
            bot.pathfinder.setGoal(new goals.GoalFollow(entity, goalRange), true)
          }
          checkLeash(entity)
          if (inRange(entity)) break
        }
      }
    } finally {
      stopBot(bot)
    }
    const tp = entity.position
    return this.ruleEvent(agent, { kind: 'reached', tick: tick(), pos: posOf(bot), agent: step.agent, target_pos: [round(tp.x), round(tp.y), round(tp.z)] }, events, signal)
  }

  /**
   * Records a `mark`/`reached` event and, when the batch has an arbiter, streams it
   * to the controller with every connected bot's pose and waits for the directive
   * (applied by `directive()` before this resolves), so this bot's next step never
   * starts before the rules have answered.
   *
   * The event happens at the clock's current tick: its position (and a strike's
   * target position) are the bots' poses at that tick, and a pose sample is taken
   * there too. Physics, and so the clock, is held until the rules answer: no bot
   * moves on meanwhile, so a freeze lands exactly on the event's tick.
   */
  async ruleEvent (agent, event, events, signal) {
    const batch = this.batch
    if (batch && batch.arbiter) gameClock.pause()
    let held = batch && batch.arbiter
    try {
      if (gameClock.running) {
        const t = tick()
        event.tick = t
        const row = gameClock.poseAt(agent.id, t, agent.bot)
        if (row) event.pos = [row[0], row[1], row[2]]
        if (event.kind === 'reached' && event.agent) {
          const other = this.fleet.agents.get(event.agent)
          const trow = other && other.connected ? gameClock.poseAt(other.id, t, other.bot) : null
          if (trow) event.target_pos = [trow[0], trow[1], trow[2]]
        }
        if (batch && batch.sampler) batch.sampler.take(t)
      }
      events.push(event)
      if (!batch || !batch.arbiter) return
      await this.arbitrate(batch, agent, event, signal)
    } finally {
      if (held) gameClock.resume()
      held = false
    }
  }

  async arbitrate (batch, agent, event, signal) {
    const seq = ++batch.seq
    const answered = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        batch.waiting.delete(seq)
        reject(new StepFailed(`no directive from the controller for event ${seq} within ${DIRECTIVE_TIMEOUT_MS} ms`))
      }, DIRECTIVE_TIMEOUT_MS)
      batch.waiting.set(seq, () => { clearTimeout(timer); resolve() })
    })
    answered.catch(() => {})
    const players = {}
    for (const [id, a] of this.fleet.agents) {
      if (!a.connected) continue
      const pose = a.pose()
      const row = gameClock.running ? gameClock.poseAt(id, event.tick, a.bot) : null
      players[id] = row ? { ...pose, pos: [row[0], row[1], row[2]], yaw: row[3], pitch: row[4] } : pose
    }
    const samples = batch.sampler ? batch.sampler.flush() : null
    this.fleet.emit({ event: 'program_event', batch: batch.id, seq, agent: agent.id, data: event, players, samples })
    await abortable(answered, signal)
  }

  /**
   * Applies the controller's answer to a rule event: `cancel` ends those bots'
   * programs now (status `cancelled`), `freeze` ends every program of the batch and
   * stops the game clock at this tick.
   */
  directive (args) {
    const batch = this.batch
    if (!batch || args.batch !== batch.id) {
      throw new BridgeError('bad_state', `no running batch ${JSON.stringify(args.batch)} (current: ${batch ? batch.id : 'none'})`)
    }
    const cancel = Array.isArray(args.cancel) ? args.cancel : []
    if (!cancel.every(id => typeof id === 'string')) throw new BridgeError('bad_request', 'cancel must be a list of agent ids')
    const reason = typeof args.reason === 'string' && args.reason ? args.reason : (args.freeze ? 'meeting' : 'cancelled')
    const targets = args.freeze ? [...batch.controllers.keys()] : cancel
    if (args.freeze && !batch.frozen) {
      batch.frozen = true
      gameClock.freeze() // the meeting's tick is the batch's last: unwinding is not game time
    }
    const t = tick()
    for (const id of targets) {
      const ac = batch.controllers.get(id)
      if (ac && !ac.signal.aborted) {
        ac.abort(Object.assign(new Error(reason), { kind: 'cancelled', tick: t }))
        stopBot(this.fleet.agents.get(id)?.bot)
      }
    }
    const release = batch.waiting.get(args.seq)
    if (release) {
      batch.waiting.delete(args.seq)
      release()
    }
    return { tick: t, cancelled: targets.filter(id => batch.controllers.has(id)) }
  }

  /** Runs one bot's validated steps with a deadline. Never rejects. */
  async runOne (agent, steps, timeoutMs, guardMs) {
    const outcome = { status: 'ok', reason: '', start_tick: tick(), end_tick: 0, steps_done: 0, events: [] }
    if (!agent.connected) {
      outcome.status = 'failed'
      outcome.reason = 'disconnected'
      outcome.end_tick = tick()
      return outcome
    }
    const bot = agent.bot
    const ac = new AbortController()
    if (this.batch) this.batch.controllers.set(agent.id, ac)
    let current = -1
    const onGone = (why) => ac.abort(Object.assign(new Error(`disconnected (${why})`), { kind: 'disconnected' }))
    agent.on('gone', onGone)
    // The deadline is game time: `timeoutMs` of ticks on the game clock, so a step lasts
    // as many ticks however busy the machine (the fake world counts the same). A wall
    // guard, far beyond it, ends a program whose clock has stopped (no bot simulating).
    const limit = Math.max(1, Math.floor(timeoutMs / TICK_MS))
    const deadline = outcome.start_tick + limit
    // At the deadline the bot stops at once (as a cancel does), and its program ends on
    // the deadline's tick even if the clock moves on while the steps unwind.
    // `at`, not `until`: a promise would settle after mineflayer's catch-up steps of
    // this callback, a tick or two past the deadline on a busy machine.
    gameClock.at(deadline, () => {
      if (ac.signal.aborted) return
      ac.abort(Object.assign(new Error(`step timeout after ${limit} ticks`), { kind: 'timeout', tick: deadline }))
      stopBot(bot)
    })
    const timer = setTimeout(() => {
      const msg = `wall guard: ${guardMs} ms passed at tick ${tick() - outcome.start_tick} of ${limit}`
      ac.abort(Object.assign(new Error(msg), { kind: 'timeout' }))
    }, guardMs)
    const loop = (async () => {
      for (let i = 0; i < steps.length; i++) {
        if (ac.signal.aborted) throw new Aborted()
        current = i
        await this.execStep(agent, steps[i], ac.signal, outcome.events)
        if (ac.signal.aborted) throw new Aborted()
        outcome.steps_done++
      }
    })()
    loop.catch(() => {}) // observed below; avoid unhandled-rejection noise after an abort
    try {
      await abortable(loop, ac.signal)
    } catch (err) {
      const abortKind = ac.signal.aborted ? ac.signal.reason?.kind : undefined
      const at = current >= 0 && current < steps.length ? ` during step ${current} (${steps[current].op})` : ''
      if (abortKind === 'timeout') {
        outcome.status = 'timeout'
        outcome.reason = `${ac.signal.reason.message}${at}`
        if (typeof ac.signal.reason.tick === 'number') outcome.end_tick = ac.signal.reason.tick
      } else if (abortKind === 'cancelled') {
        outcome.status = 'cancelled'
        outcome.reason = ac.signal.reason.message
        outcome.end_tick = ac.signal.reason.tick
      } else if (abortKind === 'disconnected') {
        outcome.status = 'failed'
        outcome.reason = `${ac.signal.reason.message}${at}`
      } else if (err instanceof StepFailed) {
        outcome.status = 'failed'
        outcome.reason = `step ${current}: ${err.message}`
      } else {
        log(`program of ${agent.id} crashed in step ${current}:`, err)
        outcome.status = 'failed'
        outcome.reason = `internal error in step ${current}: ${err && err.message}`
      }
    } finally {
      // A cancel and a game-time deadline end on their own tick; anything else now.
      const stamped = ac.signal.aborted && typeof ac.signal.reason?.tick === 'number' &&
        (outcome.status === 'cancelled' || outcome.status === 'timeout')
      if (!stamped) outcome.end_tick = tick()
      clearTimeout(timer)
      agent.removeListener('gone', onGone)
      if (!ac.signal.aborted) ac.abort(Object.assign(new Error('program ended'), { kind: 'ended' }))
      stopBot(bot)
    }
    // Real cancellation: the step loop must have stopped before we answer, so no later
    // step can run; every wait inside a step is abortable, so this is quick.
    const unwound = await Promise.race([loop.then(() => true, () => true), sleep(UNWIND_MS).then(() => false)])
    if (!unwound) log(`program of ${agent.id} did not unwind within ${UNWIND_MS} ms`)
    stopBot(bot)
    return outcome
  }

  /**
   * @param {{programs: Object<string, object[]>, timeout_ms: number,
   *   sample_interval?: number, arbiter?: boolean}} args
   * @returns {Promise<object>} a StepReport (samples in the compact form of
   *   docs/bridge-protocol.md)
   */
  async run (args) {
    const programs = args && args.programs
    const timeoutMs = args && args.timeout_ms
    const interval = args.sample_interval ?? 10
    const guardMs = args.wall_guard_ms ?? timeoutMs * WALL_GUARD_FACTOR
    if (!programs || typeof programs !== 'object' || Array.isArray(programs)) throw new BridgeError('bad_request', 'programs must be an object {id: [step, ...]}')
    if (!isNum(timeoutMs) || timeoutMs <= 0) throw new BridgeError('bad_request', `timeout_ms must be a positive number, got ${JSON.stringify(timeoutMs)}`)
    if (!isNum(guardMs) || guardMs <= 0) throw new BridgeError('bad_request', `wall_guard_ms must be a positive number (wall time), got ${JSON.stringify(guardMs)}`)
    if (!isInt(interval) || interval < 1) throw new BridgeError('bad_request', `sample_interval must be an integer >= 1 (ticks), got ${JSON.stringify(interval)}`)
    if (this.batch) throw new BridgeError('bad_state', `batch ${this.batch.id} is still running`)
    const knownIds = new Set(this.fleet.agents.keys())
    const outcomes = {}
    const valid = {}
    for (const [id, steps] of Object.entries(programs)) {
      const agent = this.fleet.agents.get(id)
      try {
        if (!agent) throw new Error(`unknown agent ${JSON.stringify(id)}`)
        valid[id] = validateProgram(steps, id, knownIds)
      } catch (err) {
        const t = tick()
        outcomes[id] = { status: 'invalid', reason: err.message, start_tick: t, end_tick: t, steps_done: 0, events: [] }
      }
    }
    this.batch = { id: ++this.batches, arbiter: args.arbiter === true, controllers: new Map(), waiting: new Map(), seq: 0, frozen: false, sampler: null }
    const clocked = new Map()
    for (const id of Object.keys(valid)) {
      const a = this.fleet.agents.get(id)
      if (a.connected && a.bot) clocked.set(id, a.bot)
    }
    gameClock.start(clocked)
    const sampler = new Sampler(this.fleet, interval)
    this.batch.sampler = sampler
    const stalls = []
    // A clocked bot whose physics stops (its chunk unloaded, its connection hanging)
    // would hold the clock for good: after STALL_RELEASE_MS without a step it is let
    // go (logged, and listed in the report's `clock_stalls`).
    const watchdog = setInterval(() => {
      for (const id of gameClock.stalled(STALL_RELEASE_MS)) {
        log(`game clock: ${id} simulated no physics step for ${STALL_RELEASE_MS} ms; the clock no longer waits for it`)
        stalls.push({ agent: id, tick: tick() })
        gameClock.release(id)
      }
    }, 250)
    const gone = []
    for (const id of clocked.keys()) {
      const a = this.fleet.agents.get(id)
      const onGone = () => gameClock.release(id)
      a.once('gone', onGone)
      gone.push([a, onGone])
    }
    let players
    try {
      await Promise.all(Object.entries(valid).map(([id, steps]) =>
        this.runOne(this.fleet.agents.get(id), steps, timeoutMs, guardMs).then(o => { outcomes[id] = o })))
    } finally {
      clearInterval(watchdog)
      for (const [a, fn] of gone) a.removeListener('gone', fn)
      // Every clocked bot stands still from its batch's end on (keys, path and
      // horizontal velocity cleared) before the closing poses are read: it stands
      // between batches exactly where this report says, and the next batch's first
      // sample finds it there.
      for (const id of clocked.keys()) stopBot(this.fleet.agents.get(id)?.bot)
      sampler.stop()
      players = this.fleet.poses()
      const last = sampler.samples.ticks.length - 1
      // where the record says each clocked bot stood at the end tick
      for (const [i, id] of sampler.samples.agents.entries()) {
        const row = sampler.samples.poses[last][i]
        if (row && players[id] && clocked.has(id)) players[id] = { ...players[id], pos: [row[0], row[1], row[2]], yaw: row[3], pitch: row[4] }
      }
      gameClock.stop()
      this.batch = null
    }
    return { tick: tick(), outcomes, players, samples: sampler.samples, clock_stalls: stalls }
  }
}

/**
 * Every connected bot's pose every `interval` ticks of the game clock while a batch
 * runs (and at every rule event's tick, and at the batch's end), in a compact form:
 * `{"agents": [id, ...], "ticks": [t, ...], "poses": [[[x, y, z, yaw, pitch] | null,
 * ...], ...]}` (one row per tick, one column per agent, null = not connected). The
 * clock calls it at each tick it reaches, and each row holds every bot's pose at that
 * very tick (`GameClock.poseAt`), so no gap exceeds `interval` however busy Node is.
 */
class Sampler {
  constructor (fleet, interval) {
    this.fleet = fleet
    this.interval = interval
    this.samples = { agents: [...fleet.agents.keys()], ticks: [], poses: [] }
    this.flushed = 0
    this.take(tick())
    this.onTick = (t) => {
      if (t - this.samples.ticks[this.samples.ticks.length - 1] >= this.interval) this.take(t)
    }
    gameClock.onTick.push(this.onTick)
  }

  take (t) {
    const row = this.samples.agents.map(id => {
      const a = this.fleet.agents.get(id)
      if (!a || !a.connected || !a.bot || !a.bot.entity) return null
      return gameClock.poseAt(id, t, a.bot)
    })
    const last = this.samples.ticks.length - 1
    if (last >= 0 && this.samples.ticks[last] === t) {
      this.samples.poses[last] = row // same tick: the same poses, now complete
    } else {
      this.samples.ticks.push(t)
      this.samples.poses.push(row)
    }
  }

  /** The samples taken since the last flush, in the compact form (for rule events). */
  flush () {
    const from = this.flushed
    this.flushed = this.samples.ticks.length
    return { agents: this.samples.agents, ticks: this.samples.ticks.slice(from), poses: this.samples.poses.slice(from) }
  }

  /** The final sample (at the batch's end tick) and no more. */
  stop () {
    gameClock.onTick = gameClock.onTick.filter(fn => fn !== this.onTick)
    this.take(tick())
  }
}

module.exports = { ProgramRunner, Sampler, checkChat, CHAT_RULES, validateStep, validateProgram, GoalWithin, stopBot }
