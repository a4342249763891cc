'use strict'
// The bots: joining, mutual visibility, teleports, poses, drop/reconnect, and the
// server-side operations (embedded server API, or operator chat commands when the
// server is external).

const { EventEmitter } = require('events')
const mineflayer = require('mineflayer')
const { pathfinder, Movements } = require('mineflayer-pathfinder')
const { Vec3 } = require('vec3')
const { blockStateId } = require('./server')
const { fastBlockAt } = require('./speedups')
const {
  BridgeError, log, sleep, waitFor, tick, round, physics, physicsDriver,
  yawToProtocol, pitchToProtocol, yawFromProtocol, pitchFromProtocol
} = require('./util')

const SPAWN_TIMEOUT_MS = 30000
const VISIBILITY_TIMEOUT_MS = 30000
const TELEPORT_TRIES = 5
const TELEPORT_CONFIRM_MS = 1000
// A server may still move a player that has just joined: flying-squid ends its login by
// re-sending the join position, undoing an operator /tp that came before. On an external
// server the runtime cannot see when login ends, so a bot placed right after joining
// must stay where it was put for this long before the placement counts (across the
// ground: a game places its bots before it builds the map there, so they may fall).
const JOIN_SETTLE_MS = 1000
const USERNAME_RE = /^[A-Za-z0-9_]{1,16}$/
const MESSAGE_LOG = 50

function vec3Of (arr, what) {
  if (!Array.isArray(arr) || arr.length !== 3 || !arr.every(v => typeof v === 'number' && Number.isFinite(v))) {
    throw new BridgeError('bad_request', `${what} must be [x, y, z] (finite numbers), got ${JSON.stringify(arr)}`)
  }
  return new Vec3(arr[0], arr[1], arr[2])
}

function finiteOr (v, dflt, what) {
  if (v === undefined || v === null) return dflt
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new BridgeError('bad_request', `${what} must be a finite number, got ${JSON.stringify(v)}`)
  return v
}

/** One seat: a bot id ("red") bound to a username ("Red") and its current mineflayer bot. */
class Agent extends EventEmitter {
  constructor (id, username) {
    super()
    this.id = id
    this.username = username
    this.bot = null
    this.connected = false
    this.expectEnd = false
    this.lastPose = { pos: [0, 0, 0], yaw: 0, pitch: 0 }
  }

  pose () {
    const bot = this.bot
    if (this.connected && bot && bot.entity) {
      const p = bot.entity.position
      this.lastPose = {
        pos: [round(p.x), round(p.y), round(p.z)],
        yaw: round(yawToProtocol(bot.entity.yaw), 3),
        pitch: round(pitchToProtocol(bot.entity.pitch), 3)
      }
    }
    return { ...this.lastPose, connected: this.connected }
  }
}

// ---- server-side operations --------------------------------------------------------

/** Embedded mode: everything through the flying-squid API in this process. */
class EmbeddedOps {
  constructor (server) {
    this.server = server
    this.kind = 'embedded'
  }

  setBlocks (blocks) { return this.server.setBlocks(blocks) }
  async broadcast (text) { this.server.broadcast(text) }
  teleport (username, pos, yaw, pitch) { return this.server.teleport(username, [pos.x, pos.y, pos.z], yaw, pitch) }
}

/**
 * External mode: the server is not ours; an operator account (a bot that joins too)
 * issues vanilla commands. What the server needs (vanilla 1.20.1 or compatible):
 *   - online-mode=false (the bots use offline authentication) and
 *     enforce-secure-profile=false (their commands and chat are unsigned);
 *   - the admin account opped (ops.json, or `op MAU_Admin` on the server console), at
 *     permission level >= 2 for /tp, /setblock, /fill, /tellraw, /gamemode; ops are
 *     also exempt from the chat spam kick, which thousands of /setblock would trigger;
 *   - the map area loaded (spawn chunks, or players nearby): /setblock fails in
 *     unloaded chunks;
 *   - recommended: `gamerule sendCommandFeedback false`, `gamerule doDaylightCycle
 *     false`, `gamerule doMobSpawning false`, difficulty peaceful, and the bots in
 *     adventure mode, so the server applies no damage or hunger of its own.
 * Commands used: /tp <name> x y z (the yaw is then set by the bot itself, which owns
 * its rotation), /fill and /setblock x y z minecraft:<block>, /tellraw @a {"text":..},
 * /gamemode spectator (the admin, so it is invisible to the players).
 * Block placement is verified through the admin's own view of the world; blocks that
 * did not appear are retried with /setblock, one by one (servers without /fill, such as
 * flying-squid, take that path).
 */
class ExternalOps {
  constructor (adminBot) {
    this.admin = adminBot
    this.kind = 'external'
  }

  command (cmd) {
    if (cmd.length > 256) throw new BridgeError('bad_request', `command longer than 256 characters: ${cmd.slice(0, 60)}...`)
    if (!this.admin || !this.admin.entity || this.admin.mauGone) throw new BridgeError('disconnected', 'the admin account is not connected')
    this.admin.chat(cmd)
  }

  async setBlocks (blocks) {
    const registry = this.admin.registry
    const names = new Map()
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i]
      if (!Array.isArray(b) || b.length !== 4 || !Number.isInteger(b[0]) || !Number.isInteger(b[1]) || !Number.isInteger(b[2]) || typeof b[3] !== 'string') {
        throw new BridgeError('bad_request', `block #${i} must be [x, y, z, "name"] with integer coordinates, got ${JSON.stringify(b)}`)
      }
      if (!names.has(b[3])) {
        blockStateId(registry, b[3]) // throws on an unknown name
        names.set(b[3], b[3].startsWith('minecraft:') ? b[3].slice(10) : b[3])
      }
    }
    // Last write wins for duplicate positions.
    const want = new Map()
    for (const b of blocks) want.set(`${b[0]},${b[1]},${b[2]}`, [b[0], b[1], b[2], names.get(b[3])])
    // Runs along x of one block type -> /fill, single blocks -> /setblock.
    const sorted = [...want.values()].sort((a, b) => (a[1] - b[1]) || (a[2] - b[2]) || (a[0] - b[0]))
    const commands = []
    for (let i = 0; i < sorted.length;) {
      let j = i
      while (j + 1 < sorted.length && sorted[j + 1][1] === sorted[i][1] && sorted[j + 1][2] === sorted[i][2] &&
        sorted[j + 1][0] === sorted[j][0] + 1 && sorted[j + 1][3] === sorted[i][3]) j++
      const [x, y, z, name] = sorted[i]
      if (j > i) commands.push(`/fill ${x} ${y} ${z} ${sorted[j][0]} ${y} ${z} minecraft:${name}`)
      else commands.push(`/setblock ${x} ${y} ${z} minecraft:${name}`)
      i = j + 1
    }
    await this._sendPaced(commands)
    const missing = await this._waitPlaced(want, 3000)
    if (missing.length > 0) {
      log(`external set_blocks: ${missing.length} blocks not seen yet; retrying them with /setblock`)
      await this._sendPaced(missing.map(([x, y, z, name]) => `/setblock ${x} ${y} ${z} minecraft:${name}`))
      const still = await this._waitPlaced(new Map(missing.map(b => [`${b[0]},${b[1]},${b[2]}`, b])), 5000)
      if (still.length > 0) {
        throw new BridgeError('set_blocks_failed', `${still.length} of ${want.size} blocks did not appear, e.g. ${JSON.stringify(still.slice(0, 3))}`)
      }
    }
    return blocks.length
  }

  async _sendPaced (commands) {
    for (let i = 0; i < commands.length; i++) {
      this.command(commands[i])
      if (i % 100 === 99) await sleep(50) // let the connection drain
    }
  }

  /** Waits until the admin sees every wanted block; returns those still wrong (loaded chunks only). */
  async _waitPlaced (want, timeoutMs) {
    const deadline = Date.now() + timeoutMs
    let wrong = []
    let unverified = 0
    let lastCount = -1
    let lastChange = Date.now()
    while (true) {
      wrong = []
      unverified = 0
      for (const b of want.values()) {
        const block = this.admin.blockAt(new Vec3(b[0], b[1], b[2]))
        if (!block) unverified++
        else if (block.name !== b[3]) wrong.push(b)
      }
      if (wrong.length === 0 || Date.now() > deadline) break
      // No progress for a second: the rest is not coming (e.g. a command the server lacks).
      if (wrong.length !== lastCount) {
        lastCount = wrong.length
        lastChange = Date.now()
      } else if (Date.now() - lastChange > 1000) break
      await sleep(100)
    }
    if (unverified > 0) log(`external set_blocks: ${unverified} blocks lie in chunks the admin has not loaded; not verified`)
    return wrong
  }

  async broadcast (text) {
    // tellraw shows the text as is, attributed to nobody; split to respect the
    // 256-character command limit.
    let rest = text
    while (rest.length > 0) {
      let n = rest.length
      while (`/tellraw @a ${JSON.stringify({ text: rest.slice(0, n) })}`.length > 256) n = Math.floor(n * 0.8)
      this.command(`/tellraw @a ${JSON.stringify({ text: rest.slice(0, n) })}`)
      rest = rest.slice(n)
    }
  }

  async teleport (username, pos) {
    const f = (v) => v.toFixed(4) // always with a decimal point: vanilla centres integer coordinates
    this.command(`/tp ${username} ${f(pos.x)} ${f(pos.y)} ${f(pos.z)}`)
  }
}

// ---- the fleet ---------------------------------------------------------------------

class Fleet {
  /**
   * @param {(event: object) => void} emit sends an unsolicited event to Python
   */
  constructor (emit) {
    this.emit = emit
    this.agents = new Map()
    this.ops = null
    this.conn = null
    this.admin = null
  }

  byUsername (username) {
    for (const a of this.agents.values()) if (a.username === username) return a
    return null
  }

  poses () {
    const out = {}
    for (const [id, a] of this.agents) out[id] = a.pose()
    return out
  }

  /** Creates a mineflayer bot and resolves once it spawned. */
  async _spawnBot (username) {
    const { host, port, version } = this.conn
    const bot = mineflayer.createBot({
      host,
      port,
      username,
      version,
      auth: 'offline',
      logErrors: false,
      hideErrors: false,
      checkTimeoutInterval: 60000
    })
    bot.loadPlugin(pathfinder)
    // Its physics steps come from the runtime's scheduler, not mineflayer's own timer.
    bot.loadPlugin(physicsDriver(physics))
    bot.loadPlugin(fastBlockAt)
    bot.on('error', (err) => log(`bot ${username} error:`, err.message))
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new BridgeError('join_timeout', `${username} did not spawn within ${SPAWN_TIMEOUT_MS / 1000} s`)), SPAWN_TIMEOUT_MS)
      const onSpawn = () => done()
      const onKicked = (reason) => done(new BridgeError('kicked', `${username} was kicked while joining: ${typeof reason === 'string' ? reason : JSON.stringify(reason)}`))
      const onEnd = (reason) => done(new BridgeError('join_failed', `${username}'s connection ended while joining: ${reason}`))
      const onError = (err) => done(new BridgeError('join_failed', `${username} could not join: ${err.message}`))
      function done (err) {
        clearTimeout(timer)
        bot.removeListener('spawn', onSpawn)
        bot.removeListener('kicked', onKicked)
        bot.removeListener('end', onEnd)
        bot.removeListener('error', onError)
        if (err) {
          try { bot.end() } catch (e) { /* already closed */ }
          reject(err)
        } else resolve()
      }
      bot.once('spawn', onSpawn)
      bot.once('kicked', onKicked)
      bot.once('end', onEnd)
      bot.once('error', onError)
    })
    const movements = new Movements(bot)
    movements.canDig = false
    movements.allow1by1towers = false
    movements.allowParkour = false
    movements.scafoldingBlocks = []
    movements.canOpenDoors = false
    movements.allowSprinting = true
    // Follow/approach walk straight at the target when nothing is in the way, so they
    // end within the range measured between real positions (see programs.js).
    movements.allowFreeMotion = true
    bot.pathfinder.setMovements(movements)
    bot.pathfinder.thinkTimeout = 5000 // ms of A* per path before giving up
    bot.pathfinder.tickTimeout = 20 // ms of A* per physics tick (8 bots share a core)
    bot.pathfinder.searchRadius = 128 // never explore the endless ground outside the map
    return bot
  }

  _attach (agent, bot) {
    agent.bot = bot
    agent.connected = true
    agent.expectEnd = false
    agent.messages = []
    // Chat lines this bot received (for `inspect`): "<Name> text" is a player's chat
    // (the pattern mineflayer itself uses), anything else comes from the server.
    bot.on('messagestr', (text, position) => {
      const m = /^<([A-Za-z0-9_]{1,16})> (.*)$/s.exec(text)
      agent.messages.push({ tick: tick(), from: m ? m[1] : null, text: m ? m[2] : text, position: position ?? null })
      if (agent.messages.length > MESSAGE_LOG) agent.messages.shift()
    })
    let kickReason = null
    bot.on('kicked', (reason) => { kickReason = typeof reason === 'string' ? reason : JSON.stringify(reason) })
    bot.once('end', (reason) => {
      if (agent.bot !== bot) return
      agent.pose() // refresh lastPose while bot.entity is still there
      agent.connected = false
      const why = kickReason ? `kicked: ${kickReason}` : String(reason)
      log(`${agent.username} (${agent.id}) disconnected: ${why}${agent.expectEnd ? ' (expected)' : ''}`)
      agent.emit('gone', why)
      if (!agent.expectEnd) this.emit({ event: 'disconnect', agent: agent.id, reason: why, tick: tick() })
    })
  }

  /**
   * True when the embedded server has read every byte each connected bot sent it and
   * each bot every byte the server sent it: the server has taken every movement of the
   * last physics round and the other bots have its updates (the scheduler waits for
   * this before the next round at a speed above real time). Always true on an
   * external server, whose side of the connection is out of sight.
   */
  netQuiet () {
    if (!this.ops || this.ops.kind !== 'embedded') return true
    const server = this.ops.server
    for (const a of this.agents.values()) {
      if (!a.connected || !a.bot || !a.bot._client) continue
      const mine = a.bot._client.socket
      const player = server.playerByName(a.username)
      const theirs = player && player._client ? player._client.socket : null
      if (!mine || !theirs) continue
      if (theirs.bytesRead < mine.bytesWritten || mine.bytesRead < theirs.bytesWritten) return false
    }
    return true
  }

  /** True once every connected agent sees every other connected agent as a named player entity. */
  _missingVisibility () {
    const missing = []
    const live = [...this.agents.values()].filter(a => a.connected)
    for (const a of live) {
      for (const b of live) {
        if (a === b) continue
        if (!a.bot.players[b.username] || !a.bot.players[b.username].entity) missing.push(`${a.username} cannot see ${b.username}`)
      }
    }
    return missing
  }

  async _waitVisibility () {
    try {
      await waitFor(() => this._missingVisibility().length === 0, VISIBILITY_TIMEOUT_MS, 50, 'the bots to see each other')
    } catch (err) {
      const missing = this._missingVisibility()
      throw new BridgeError('visibility_timeout', `after ${VISIBILITY_TIMEOUT_MS / 1000} s: ${missing.slice(0, 8).join('; ')}${missing.length > 8 ? ` (+${missing.length - 8} more)` : ''}`)
    }
  }

  /**
   * Joins all bots, waits until each sees the others, teleports each to its pos.
   * @param {object} args see docs/bridge-protocol.md (connect)
   * @param {import('./server').EmbeddedServer|null} embedded the server of this process, if any
   */
  async connect (args, embedded) {
    if ([...this.agents.values()].some(a => a.connected)) throw new BridgeError('bad_state', 'bots are already connected')
    const bots = args.bots
    if (!Array.isArray(bots) || bots.length === 0) throw new BridgeError('bad_request', 'bots must be a non-empty list')
    const seenIds = new Set()
    const seenNames = new Set()
    const specs = bots.map((b, i) => {
      if (!b || typeof b.id !== 'string' || !b.id) throw new BridgeError('bad_request', `bots[${i}].id must be a non-empty string`)
      if (typeof b.username !== 'string' || !USERNAME_RE.test(b.username)) throw new BridgeError('bad_request', `bots[${i}].username must match ${USERNAME_RE}`)
      if (seenIds.has(b.id) || seenNames.has(b.username.toLowerCase())) throw new BridgeError('bad_request', `duplicate bot id or username: ${b.id}/${b.username}`)
      seenIds.add(b.id)
      seenNames.add(b.username.toLowerCase())
      return { id: b.id, username: b.username, pos: vec3Of(b.pos, `bots[${i}].pos`), yaw: finiteOr(b.yaw, 0, `bots[${i}].yaw`), pitch: finiteOr(b.pitch, 0, `bots[${i}].pitch`) }
    })
    const external = Boolean(args.external)
    if (external && physics.speed !== 1) {
      throw new BridgeError('bad_request', `speed ${physics.speedName()} needs the embedded server: a server we do not run may enforce movement speed, so an external server plays at real time (speed 1)`)
    }
    this.conn = { host: args.host ?? '127.0.0.1', port: args.port, version: args.version ?? '1.20.1' }
    if (!Number.isInteger(this.conn.port) || this.conn.port <= 0) throw new BridgeError('bad_request', 'port must be a positive integer')
    const t0 = Date.now()
    try {
      return await this._connect(specs, external, args, embedded, t0)
    } catch (err) {
      // Leave nothing half-joined behind: a later connect must start from scratch.
      log(`connect failed (${err.message}); disconnecting the bots that joined`)
      await this.quitAll()
      this.agents.clear()
      this.ops = null
      this.admin = null
      throw err
    }
  }

  async _connect (specs, external, args, embedded, t0) {
    if (external) {
      const adminName = args.admin ?? 'MAU_Admin'
      if (!USERNAME_RE.test(adminName)) throw new BridgeError('bad_request', `admin must match ${USERNAME_RE}`)
      if (specs.some(sp => sp.username.toLowerCase() === adminName.toLowerCase())) throw new BridgeError('bad_request', 'admin must not be one of the bots')
      const admin = await this._spawnBot(adminName)
      this.admin = admin
      admin.on('end', (reason) => {
        admin.mauGone = true
        log(`admin ${adminName} disconnected: ${reason}`)
        if (this.admin === admin) this.emit({ event: 'log', level: 'error', message: `admin ${adminName} disconnected: ${reason}`, tick: tick() })
      })
      this.admin.on('messagestr', (msg) => log(`[admin sees] ${msg}`))
      this.ops = new ExternalOps(this.admin)
      this.ops.command('/gamemode spectator')
    } else {
      if (!embedded) throw new BridgeError('bad_state', 'no embedded server: call start_server first, or connect with external: true')
      this.ops = new EmbeddedOps(embedded)
    }
    for (const s of specs) this.agents.set(s.id, new Agent(s.id, s.username))
    // allSettled: on a failure, every other join must have finished (and be attached)
    // before the cleanup in connect() disconnects them.
    const joins = await Promise.allSettled(specs.map(async (s) => {
      const agent = this.agents.get(s.id)
      const bot = await this._spawnBot(s.username)
      this._attach(agent, bot)
    }))
    const failed = joins.find(j => j.status === 'rejected')
    if (failed) throw failed.reason
    const tSpawned = Date.now()
    await this._waitVisibility()
    const tVisible = Date.now()
    const settle = this.ops.kind === 'external' ? JOIN_SETTLE_MS : 0 // the embedded server waits for login itself
    await Promise.all(specs.map(s => this._teleportAgent(this.agents.get(s.id), s.pos, s.yaw, s.pitch, settle)))
    log(`connect: ${specs.length} bots spawned in ${tSpawned - t0} ms, all visible after ${tVisible - t0} ms, placed after ${Date.now() - t0} ms`)
    return { players: this.poses() }
  }

  /**
   * Moves one bot server-side and waits until the bot itself reports the new position.
   * With `settleMs`, the bot must also still be there after that long (a placement right
   * after joining an external server, see JOIN_SETTLE_MS); if it was moved away, it is
   * placed again.
   */
  async _teleportAgent (agent, pos, yaw, pitch = 0, settleMs = 0) {
    if (!agent.connected) throw new BridgeError('disconnected', `${agent.id} is not connected`)
    const bot = agent.bot
    const across = () => {
      const p = bot.entity.position
      return Math.abs(p.x - pos.x) < 0.05 && Math.abs(p.z - pos.z) < 0.05
    }
    const at = () => across() && Math.abs(bot.entity.position.y - pos.y) < 1.0
    for (let attempt = 1; attempt <= TELEPORT_TRIES; attempt++) {
      let moved = false
      const onForced = () => { if (at()) moved = true }
      bot.on('forcedMove', onForced)
      try {
        await this.ops.teleport(agent.username, pos, yaw, pitch)
        await waitFor(() => moved || !agent.connected, TELEPORT_CONFIRM_MS, 20, 'teleport').catch(() => {})
      } finally {
        bot.removeListener('forcedMove', onForced)
      }
      if (!agent.connected) throw new BridgeError('disconnected', `${agent.id} disconnected during teleport`)
      if ((moved || at()) && settleMs > 0) {
        await sleep(settleMs)
        if (!agent.connected) throw new BridgeError('disconnected', `${agent.id} disconnected during teleport`)
        // Moved away across the ground (the login's re-sent join position); a bot that
        // only fell where it stands (no map built under it yet) stays placed.
        if (!across()) {
          log(`${agent.username} was moved away from ${pos} after its placement (attempt ${attempt}), to ${bot.entity.position}; placing it again`)
          continue
        }
      }
      // No position packet arrives when the bot already stood there (some servers skip it).
      if (moved || at()) {
        // The bot owns its rotation: set it client-side as well (external mode cannot
        // send yaw with /tp portably).
        await bot.look(yawFromProtocol(yaw), pitchFromProtocol(pitch), true)
        return
      }
      log(`teleport of ${agent.username} not confirmed (attempt ${attempt}), at ${bot.entity.position}`)
    }
    throw new BridgeError('teleport_failed', `${agent.id} did not arrive at ${pos} after ${TELEPORT_TRIES} attempts`)
  }

  async teleport (moves) {
    if (!this.ops) throw new BridgeError('bad_state', 'not connected')
    if (!moves || typeof moves !== 'object' || Array.isArray(moves)) throw new BridgeError('bad_request', 'moves must be an object {id: {pos, yaw}}')
    const jobs = []
    for (const [id, m] of Object.entries(moves)) {
      const agent = this.agents.get(id)
      if (!agent) throw new BridgeError('bad_request', `unknown agent ${id}`)
      if (!agent.connected) throw new BridgeError('disconnected', `${id} is not connected`)
      jobs.push([agent, vec3Of(m && m.pos, `moves.${id}.pos`), finiteOr(m.yaw, 0, `moves.${id}.yaw`), finiteOr(m.pitch, 0, `moves.${id}.pitch`)])
    }
    await Promise.all(jobs.map(([a, p, y, pi]) => this._teleportAgent(a, p, y, pi)))
    return { players: this.poses() }
  }

  async setBlocks (blocks) {
    if (!Array.isArray(blocks)) throw new BridgeError('bad_request', 'blocks must be a list of [x, y, z, name]')
    if (!this.ops) throw new BridgeError('bad_state', 'not connected')
    return this.ops.setBlocks(blocks)
  }

  async broadcast (text) {
    if (typeof text !== 'string' || text.length === 0) throw new BridgeError('bad_request', 'text must be a non-empty string')
    if (!this.ops) throw new BridgeError('bad_state', 'not connected')
    await this.ops.broadcast(text)
  }

  /** Ends one bot's TCP connection abruptly (fault injection). */
  drop (id) {
    const agent = this.agents.get(id)
    if (!agent) throw new BridgeError('bad_request', `unknown agent ${id}`)
    if (!agent.connected) throw new BridgeError('disconnected', `${id} is not connected`)
    // No `expectEnd`: the drop is meant to look like a real disconnect, event included.
    agent.bot._client.socket.destroy()
  }

  /** A new bot with the same username; waits until it is seen, then places it. */
  async reconnect (id, posArr, yaw = 0) {
    const agent = this.agents.get(id)
    if (!agent) throw new BridgeError('bad_request', `unknown agent ${id}`)
    const pos = vec3Of(posArr, 'pos')
    if (agent.connected) {
      agent.expectEnd = true
      agent.bot.quit('reconnect')
      await waitFor(() => !agent.connected, 5000, 20, `${id} to leave`).catch(() => {})
    }
    if (this.ops.kind === 'embedded') {
      // The server must have forgotten the old connection, or it refuses the login.
      await waitFor(() => this.ops.server.playerByName(agent.username) === null, 10000, 20, `the server to drop the old ${agent.username}`)
    }
    let bot = null
    for (let attempt = 1; ; attempt++) {
      try {
        bot = await this._spawnBot(agent.username)
        break
      } catch (err) {
        if (attempt >= 3) throw err
        log(`reconnect of ${agent.username} failed (attempt ${attempt}): ${err.message}; retrying`)
        await sleep(1000)
      }
    }
    this._attach(agent, bot)
    await this._waitVisibility()
    await this._teleportAgent(agent, pos, yaw, 0, this.ops.kind === 'external' ? JOIN_SETTLE_MS : 0)
    return { players: this.poses() }
  }

  /**
   * Diagnostics of what each bot perceives (tests, debugging): which other agents it
   * sees and where, the block under its crosshair, the chat lines it received; and
   * optionally the blocks at given positions as the first connected bot sees them.
   */
  inspect (args = {}) {
    const bots = {}
    const live = [...this.agents.values()].filter(a => a.connected)
    for (const a of this.agents.values()) {
      const info = { connected: a.connected, sees: {}, cursor: null, messages: a.messages ? a.messages.slice() : [] }
      if (a.connected) {
        for (const b of live) {
          if (b === a) continue
          const e = a.bot.players[b.username]?.entity
          if (e) info.sees[b.id] = { pos: [round(e.position.x), round(e.position.y), round(e.position.z)], yaw: round(yawToProtocol(e.yaw), 2) }
        }
        // Own ray cast: mineflayer's blockAtCursor() returns null whenever pitch or
        // yaw is exactly 0 (it tests them for truthiness).
        const e = a.bot.entity
        const dir = new Vec3(-Math.sin(e.yaw) * Math.cos(e.pitch), Math.sin(e.pitch), -Math.cos(e.yaw) * Math.cos(e.pitch))
        const block = a.bot.world.raycast(e.position.offset(0, e.eyeHeight ?? 1.62, 0), dir.normalize(), 6)
        if (block) info.cursor = { block: block.name, pos: [block.position.x, block.position.y, block.position.z] }
      }
      bots[a.id] = info
    }
    const out = { tick: tick(), bots }
    if (Array.isArray(args.blocks)) {
      const viewer = live[0]?.bot || this.admin
      if (!viewer) throw new BridgeError('bad_state', 'no connected bot to look at blocks')
      out.blocks = args.blocks.map(p => {
        const b = viewer.blockAt(vec3Of(p, 'blocks[]'))
        return b ? b.name : null
      })
    }
    return out
  }

  async quitAll () {
    const all = [...this.agents.values()].filter(a => a.connected)
    for (const a of all) {
      a.expectEnd = true
      try { a.bot.quit('shutdown') } catch (err) { log('quit failed', err) }
    }
    const admin = this.admin
    this.admin = null // an expected end: no event
    if (admin) {
      try { admin.quit('shutdown') } catch (err) { log('admin quit failed', err) }
    }
    await waitFor(() => all.every(a => !a.connected), 2000, 20, 'bots to quit').catch(() => {})
  }
}

module.exports = { Fleet, Agent }
