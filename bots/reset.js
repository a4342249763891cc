'use strict'
// A warm server: one embedded server and its bots (with their renderers) reused across
// the games of one worker. `reset` puts back everything a game can change; `verify`
// compares the whole world with what a fresh server would hold for the next game and
// lists every difference it finds (a "trace"). The controller plays on a warm server
// only when the check finds none. See "Warm server" in docs/bridge-protocol.md.
//
// What a fresh server holds for a game (its *layout*): the flat ground of flatgen.js,
// the map's blocks (the `set_blocks` calls made before `connect`, or the blocks a
// `reset` names), the seated bots and nothing else: no other entity, empty
// inventories, no effects, full health and food, adventure mode, no chat received, the
// game clock at tick 0, fixed noon.

const { Vec3 } = require('vec3')
const { LAYERS, MIN_Y, WORLD_HEIGHT } = require('./flatgen')
const { blockStateId, GAME_MODE_ADVENTURE, NOON } = require('./server')
const { stopBot } = require('./programs')
const { BridgeError, gameClock, log, physics, sleep, waitFor, tick, clockMs, yawToProtocol, pitchToProtocol } = require('./util')

const SECTION_VOLUME = 4096
const SECTIONS = WORLD_HEIGHT / 16
const TRACE_LIMIT = 40 // traces listed in a check's answer (the count covers them all)
const POS_TOLERANCE = 0.05 // blocks, on x and z: a teleport places a bot exactly
const Y_TOLERANCE = 0.1
const ANGLE_TOLERANCE = 1 // degrees
const SEEN_TOLERANCE = 0.1 // blocks between where a bot stands and where the others see it
const FULL_HEALTH = 20
const FULL_FOOD = 20
const FRESH_SATURATION = 5
const VISIBLE_MS = 5000 // a reset waits this long for every bot to see the others seated
const QUIET_MS = 1000 // the most a reset or a check waits for the network to drain
const SETTLE_ROUNDS_MS = 150 // idle physics rounds (50 ms each) before chat is cleared

const sectionOf = (y) => (y - MIN_Y) >> 4
const indexOf = (x, y, z) => ((y & 15) << 8) | ((z & 15) << 4) | (x & 15)
const fmt = (v) => Math.round(v * 100) / 100
const where = (p) => `(${fmt(p.x)}, ${fmt(p.y)}, ${fmt(p.z)})`

/** An entity for a trace: `an item entity #9` (server and client entities alike). */
function describe (entity) {
  const kind = entity.name && entity.name !== 'unknown' ? entity.name : (entity.type === 'object' && entity.itemId !== undefined ? 'item' : entity.type)
  return `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} entity #${entity.id}`
}

/** Smallest difference between two angles in degrees. */
function angleGap (a, b) {
  const d = Math.abs(((a - b) % 360 + 360) % 360)
  return Math.min(d, 360 - d)
}

/** The seats of a layout from `connect`'s or `reset`'s `bots` list. */
function seatsOf (bots) {
  if (!Array.isArray(bots) || bots.length === 0) throw new BridgeError('bad_request', 'bots must be a non-empty list of {id, username, pos, yaw}')
  return bots.map((b, i) => {
    if (!b || typeof b.id !== 'string' || typeof b.username !== 'string') throw new BridgeError('bad_request', `bots[${i}] needs an id and a username`)
    const p = b.pos
    if (!Array.isArray(p) || p.length !== 3 || !p.every(v => typeof v === 'number' && Number.isFinite(v))) throw new BridgeError('bad_request', `bots[${i}].pos must be [x, y, z]`)
    const yaw = b.yaw ?? 0
    const pitch = b.pitch ?? 0
    if (typeof yaw !== 'number' || typeof pitch !== 'number') throw new BridgeError('bad_request', `bots[${i}].yaw and pitch must be numbers`)
    return { id: b.id, username: b.username, pos: new Vec3(p[0], p[1], p[2]), yaw, pitch }
  })
}

/**
 * What a fresh server holds for one game: the ground, the map's blocks and the seats.
 * Blocks are kept per section of 16^3 as the state id each of its blocks must have.
 */
class Layout {
  /**
   * @param {object} registry minecraft-data of the server's version
   * @param {Array<[number, number, number, string]>} blocks the map (last write wins)
   * @param {Array<object>} seats from `seatsOf`
   */
  constructor (registry, blocks, seats) {
    this.registry = registry
    this.seats = seats
    this.ground = new Map() // section index -> Uint16Array of a fresh column's section
    for (const [y, name] of LAYERS) {
      const sy = sectionOf(y)
      if (!this.ground.has(sy)) this.ground.set(sy, new Uint16Array(SECTION_VOLUME))
      const section = this.ground.get(sy)
      const id = registry.blocksByName[name].defaultState
      for (let x = 0; x < 16; x++) for (let z = 0; z < 16; z++) section[indexOf(x, y, z)] = id
    }
    this.columns = new Map() // "cx,cz" -> Map(section index -> Uint16Array)
    const ids = new Map()
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i]
      if (!Array.isArray(b) || b.length !== 4 || !Number.isInteger(b[0]) || !Number.isInteger(b[1]) || !Number.isInteger(b[2]) || typeof b[3] !== 'string') {
        throw new BridgeError('bad_request', `block #${i} must be [x, y, z, "name"] with integer coordinates, got ${JSON.stringify(b)}`)
      }
      if (b[1] < MIN_Y || b[1] >= MIN_Y + WORLD_HEIGHT) throw new BridgeError('bad_request', `block #${i} y=${b[1]} is outside the world`)
      let id = ids.get(b[3])
      if (id === undefined) {
        id = blockStateId(registry, b[3])
        ids.set(b[3], id)
      }
      const [x, y, z] = b
      const key = `${x >> 4},${z >> 4}`
      let column = this.columns.get(key)
      if (!column) this.columns.set(key, (column = new Map()))
      const sy = sectionOf(y)
      let section = column.get(sy)
      if (!section) {
        const ground = this.ground.get(sy)
        column.set(sy, (section = ground ? ground.slice() : new Uint16Array(SECTION_VOLUME)))
      }
      section[indexOf(x, y, z)] = id
    }
  }

  /** The state ids a fresh section must hold, or null when it is all air. */
  section (cx, cz, sy) {
    const column = this.columns.get(`${cx},${cz}`)
    return (column && column.get(sy)) || this.ground.get(sy) || null
  }

  name (stateId) {
    const block = this.registry.blocksByStateId[stateId]
    return block ? block.name : `state ${stateId}`
  }

  /**
   * Every block of `column` (chunk cx, cz; a prismarine-chunk column) that differs from
   * the layout, pushed to `out` as [x, y, z, actual state, expected state]. Only the
   * sections the map or the ground fill are read block by block; any other section
   * must be empty, which its block count says at once.
   * @param {(sy: number) => boolean} [only] sections to look at (default: all)
   */
  diff (cx, cz, column, out, only) {
    for (let sy = 0; sy < SECTIONS; sy++) {
      if (only && !only(sy)) continue
      const section = column.sections[sy]
      const want = this.section(cx, cz, sy)
      if (!want && (!section || section.solidBlockCount === 0)) continue
      for (let i = 0; i < SECTION_VOLUME; i++) {
        const have = section ? section.data.get(i) : 0
        const expected = want ? want[i] : 0
        if (have !== expected) {
          out.push([cx * 16 + (i & 15), MIN_Y + sy * 16 + (i >> 8), cz * 16 + ((i >> 4) & 15), have, expected])
        }
      }
    }
  }
}

/**
 * The reset and the check of a warm server, over the runtime's own objects.
 */
class WarmServer {
  /**
   * @param {{fleet: import('./fleet').Fleet, runner: import('./programs').ProgramRunner, server: () => import('./server').EmbeddedServer|null}} parts
   */
  constructor ({ fleet, runner, server }) {
    this.fleet = fleet
    this.runner = runner
    this.server = server
    this.mapBlocks = [] // the set_blocks made before connect: the map of a cold start
    this.layout = null
    this.resets = 0
  }

  _embedded () {
    const server = this.server()
    if (!server) throw new BridgeError('bad_state', 'no embedded server: a warm reset needs the server of this runtime')
    if (this.fleet.ops && this.fleet.ops.kind !== 'embedded') throw new BridgeError('bad_state', 'the bots play on an external server')
    return server
  }

  /** A `set_blocks` before `connect`: part of the map a fresh server is built with. */
  recordBuild (blocks) {
    for (const b of blocks) this.mapBlocks.push(b)
  }

  /** A `connect` that succeeded: its seats (and the map built before it) are the layout. */
  recordConnect (bots) {
    const server = this.server()
    if (!server) return // an external server: no layout to keep
    this.layout = new Layout(server.registry, this.mapBlocks, seatsOf(bots))
  }

  _layoutFrom (args) {
    const server = this._embedded()
    if (args.blocks === undefined && args.bots === undefined) {
      if (!this.layout) throw new BridgeError('bad_state', 'no layout yet: give blocks and bots, or connect first')
      return this.layout
    }
    if (!Array.isArray(args.blocks)) throw new BridgeError('bad_request', 'blocks must be a list of [x, y, z, name]')
    return new Layout(server.registry, args.blocks, seatsOf(args.bots))
  }

  /** Resolves once the network between bots and server is idle (at most `ms`). */
  async _quiet (ms = QUIET_MS) {
    await waitFor(() => this.fleet.netQuiet(), ms, 10, 'the network to drain').catch(() => {})
  }

  /** Blocks of the server's world that differ from the layout, and map columns it lacks. */
  _serverDiffs (server, layout) {
    const out = []
    const missing = []
    const columns = server.serv.overworld.columns
    for (const [key, column] of Object.entries(columns)) {
      const [cx, cz] = key.split(',').map(Number)
      layout.diff(cx, cz, column, out)
    }
    for (const key of layout.columns.keys()) if (!columns[key]) missing.push(key)
    return { diffs: out, missing }
  }

  /**
   * Puts the world back as a fresh server would hold it for the game `args` describes
   * (`blocks`: the map, `bots`: the seats), then makes it the layout `verify` checks.
   */
  async reset (args) {
    const t0 = clockMs()
    const server = this._embedded()
    if (gameClock.running || this.runner.batch) throw new BridgeError('bad_state', 'a batch of programs is running')
    const layout = this._layoutFrom(args)
    const agents = []
    for (const seat of layout.seats) {
      const agent = this.fleet.agents.get(seat.id)
      if (!agent || agent.username !== seat.username) throw new BridgeError('bad_state', `no bot ${seat.id} (${seat.username}) in this runtime`)
      if (!agent.connected) throw new BridgeError('disconnected', `${seat.id} is not connected`)
      agents.push([agent, seat])
    }
    for (const [agent] of agents) stopBot(agent.bot)
    const serv = server.serv
    const removed = { entities: 0, players: 0, items: 0, effects: 0, players_restored: 0 }
    // The server's own state: fixed noon, no daylight cycle, its tick count from zero.
    serv.doDaylightCycle = false
    serv.setTime(NOON)
    serv.tickCount = 0
    // Entities: only the seated bots stay.
    const usernames = new Set(layout.seats.map(s => s.username))
    for (const entity of Object.values(serv.entities)) {
      if (entity.type === 'player') {
        if (!usernames.has(entity.username)) {
          removed.players++
          try { entity._client.end('reset') } catch (err) { log('kick failed', err) }
        }
        continue
      }
      removed.entities++
      if (typeof entity.destroy === 'function') entity.destroy()
      else serv.destroyEntity(entity)
    }
    // Each seated player as it joins: empty inventory, no effects, full health and food.
    for (const [agent] of agents) {
      const player = server.playerByName(agent.username)
      if (!player) throw new BridgeError('bad_state', `the server has no player ${agent.username}`)
      for (let slot = 0; slot < player.inventory.slots.length; slot++) {
        if (player.inventory.slots[slot]) {
          player.inventory.updateSlot(slot, undefined)
          removed.items++
        }
      }
      if (player.heldItemSlot !== 0) {
        player.heldItemSlot = 0
        player._client.write('held_item_slot', { slot: 0 })
      }
      for (const [id, effect] of Object.entries(player.effects || {})) {
        if (effect === null) continue
        player.removeEffect(Number(id))
        // to the player itself too (removeEffect tells those near it)
        player._client.write('remove_entity_effect', { entityId: player.id, effectId: Number(id) })
        removed.effects++
      }
      if (player.health !== FULL_HEALTH || player.food !== FULL_FOOD || player.foodSaturation !== FRESH_SATURATION) {
        player.health = FULL_HEALTH
        player.food = FULL_FOOD
        player.foodSaturation = FRESH_SATURATION
        player.updateHealth(FULL_HEALTH)
        removed.players_restored++
      }
      if (player.gameMode !== GAME_MODE_ADVENTURE) player.setGameMode(GAME_MODE_ADVENTURE)
    }
    // Blocks: every column the world holds, back to the ground and the map (a map
    // column the world lacks is generated first, as set_blocks would).
    for (const key of layout.columns.keys()) {
      if (serv.overworld.columns[key]) continue
      const [cx, cz] = key.split(',').map(Number)
      await serv.overworld.getColumn(cx, cz)
    }
    const fixes = this._serverDiffs(server, layout).diffs.map(d => [d[0], d[1], d[2], d[4]])
    await server.setBlockStates(fixes)
    // Seats: each bot where a fresh game places it (the server's teleport, as connect).
    await Promise.all(agents.map(([agent, seat]) => this.fleet._teleportAgent(agent, seat.pos, seat.yaw, seat.pitch)))
    try {
      await waitFor(() => this._seenTraces(layout, agents).length === 0, VISIBLE_MS, 20, 'every bot to see the others seated')
    } catch (err) {
      const left = this._seenTraces(layout, agents)
      throw new BridgeError('visibility_timeout', `after the reset: ${left.slice(0, 4).join('; ')}`)
    }
    // Let what is still on its way arrive (a last chat line), then forget what was heard.
    await this._quiet()
    await sleep(SETTLE_ROUNDS_MS)
    await this._quiet()
    for (const [agent] of agents) agent.messages = []
    // The counters a fresh runtime starts from.
    gameClock.rewind()
    this.runner.batches = 0
    physics.resetStats()
    this.layout = layout
    this.mapBlocks = []
    this.resets++
    const ms = Math.round(clockMs() - t0)
    log(`reset ${this.resets}: ${fixes.length} blocks rebuilt, ${removed.entities} entities and ${removed.items} items removed, ${removed.effects} effects cleared in ${ms} ms`)
    return { players: this.fleet.poses(), rebuilt: fixes.length, removed, ms }
  }

  /** Where a bot's client sees the other seated bots, against their seats. */
  _seenTraces (layout, agents) {
    const out = []
    for (const [agent] of agents) {
      if (!agent.connected || !agent.bot) continue
      for (const [other, seat] of agents) {
        if (other === agent) continue
        const e = agent.bot.players[other.username]?.entity
        if (!e) out.push(`${agent.username} does not see ${other.username}`)
        else if (e.position.distanceTo(seat.pos) > SEEN_TOLERANCE) out.push(`${agent.username} sees ${other.username} at ${where(e.position)}, its seat is ${where(seat.pos)}`)
      }
    }
    return out
  }

  /**
   * Compares the world with what a fresh server holds for the layout (the last
   * `reset`'s, or the cold start's map and seats; `args.blocks` and `args.bots` give
   * another) and lists every difference.
   */
  async verify (args = {}) {
    const t0 = clockMs()
    const server = this._embedded()
    const layout = this._layoutFrom(args)
    const serv = server.serv
    const traces = []
    const add = (text) => traces.push(text)
    await this._quiet() // what is on its way (a chat line, a move) is counted too
    // The game clock and the runtime's counters.
    if (gameClock.running || this.runner.batch) add('a batch of programs is running')
    if (tick() !== 0) add(`the game clock stands at tick ${tick()}, a fresh server's at 0`)
    if (gameClock.onTick.length || gameClock.waiters.length) add('the game clock still has listeners of an earlier batch')
    if (serv.time !== NOON) add(`the server's time of day is ${serv.time}, a fresh server's ${NOON}`)
    if (serv.doDaylightCycle) add('the server runs a daylight cycle')
    // Who is there.
    const seats = new Map(layout.seats.map(s => [s.id, s]))
    const agents = []
    for (const seat of layout.seats) {
      const agent = this.fleet.agents.get(seat.id)
      if (!agent || agent.username !== seat.username) add(`no bot ${seat.id} (${seat.username})`)
      else if (!agent.connected || !agent.bot || !agent.bot.entity) add(`${seat.username} is not connected`)
      else agents.push([agent, seat])
    }
    for (const agent of this.fleet.agents.values()) {
      if (!seats.has(agent.id) && agent.connected) add(`${agent.username} is connected but has no seat`)
    }
    const usernames = new Set(layout.seats.map(s => s.username))
    const joins = new Set(layout.seats.map(s => `${s.username} joined the game`))
    for (const entity of Object.values(serv.entities)) {
      if (entity.type === 'player') {
        if (!usernames.has(entity.username)) add(`the server has a player ${entity.username} with no seat`)
      } else {
        add(`the server has ${describe(entity)} at ${where(entity.position)}`)
      }
    }
    // Every block of every column the server holds.
    const { diffs, missing } = this._serverDiffs(server, layout)
    for (const [x, y, z, have, want] of diffs.slice(0, TRACE_LIMIT)) add(`block at (${x}, ${y}, ${z}) is ${layout.name(have)}, the map says ${layout.name(want)}`)
    if (diffs.length > TRACE_LIMIT) add(`... and ${diffs.length - TRACE_LIMIT} more blocks differ from the map`)
    for (const key of missing) add(`map column ${key} is not in the world`)
    // Each bot, on the server and in its own client.
    for (const [agent, seat] of agents) {
      const name = agent.username
      const bot = agent.bot
      const player = server.playerByName(name)
      if (!player) {
        add(`the server has no player ${name}`)
      } else {
        player.inventory.slots.forEach((item, slot) => { if (item) add(`${name} holds ${item.name} x${item.count} in slot ${slot} (server)`) })
        for (const [id, effect] of Object.entries(player.effects || {})) if (effect !== null) add(`${name} has effect ${id} (server)`)
        if (player.health !== FULL_HEALTH || player.food !== FULL_FOOD) add(`${name} has health ${player.health} and food ${player.food} (server), a fresh player ${FULL_HEALTH} and ${FULL_FOOD}`)
        if (player.gameMode !== GAME_MODE_ADVENTURE) add(`${name} is in game mode ${player.gameMode} (server), not adventure`)
        if (player.heldItemSlot !== 0) add(`${name} holds hotbar slot ${player.heldItemSlot} (server), a fresh player 0`)
        if (player.position.distanceTo(seat.pos) > SEEN_TOLERANCE) add(`the server has ${name} at ${where(player.position)}, its seat is ${where(seat.pos)}`)
      }
      bot.inventory.slots.forEach((item, slot) => { if (item) add(`${name} holds ${item.name} x${item.count} in slot ${slot}`) })
      for (const id of Object.keys(bot.entity.effects || {})) add(`${name} has effect ${id}`)
      if (bot.health !== FULL_HEALTH || bot.food !== FULL_FOOD) add(`${name} has health ${bot.health} and food ${bot.food}, a fresh player ${FULL_HEALTH} and ${FULL_FOOD}`)
      if (bot.game && bot.game.gameMode !== 'adventure') add(`${name} plays in ${bot.game.gameMode} mode, not adventure`)
      const p = bot.entity.position
      if (Math.abs(p.x - seat.pos.x) > POS_TOLERANCE || Math.abs(p.z - seat.pos.z) > POS_TOLERANCE || Math.abs(p.y - seat.pos.y) > Y_TOLERANCE) {
        add(`${name} stands at ${where(p)}, its seat is ${where(seat.pos)}`)
      }
      const yaw = yawToProtocol(bot.entity.yaw)
      const pitch = pitchToProtocol(bot.entity.pitch)
      if (angleGap(yaw, seat.yaw) > ANGLE_TOLERANCE || Math.abs(pitch - seat.pitch) > ANGLE_TOLERANCE) add(`${name} faces yaw ${fmt(yaw)} pitch ${fmt(pitch)}, its seat yaw ${seat.yaw} pitch ${seat.pitch}`)
      const v = bot.entity.velocity
      if (Math.abs(v.x) > 1e-3 || Math.abs(v.z) > 1e-3) add(`${name} is still moving (velocity ${where(v)})`)
      const keys = Object.entries(bot.controlState || {}).filter(([, on]) => on).map(([k]) => k)
      if (keys.length) add(`${name} still holds ${keys.join(', ')}`)
      if (bot.pathfinder && bot.pathfinder.goal) add(`${name} still has a path goal`)
      // A fresh server's bots have heard the seated bots join, and nothing else.
      const heard = (agent.messages || []).filter(m => !(m.from === null && joins.has(m.text.replace(/\.$/, ''))))
      if (heard.length) {
        const m = heard[heard.length - 1]
        add(`${name} has ${heard.length} chat line(s) from before, last ${JSON.stringify(m.from ? `<${m.from}> ${m.text}` : m.text)}`)
      }
      for (const entity of Object.values(bot.entities)) {
        if (entity === bot.entity) continue
        if (entity.type === 'player' && usernames.has(entity.username)) continue
        add(`${name}'s client has ${describe(entity)} at ${where(entity.position)}`)
      }
      // The map as the bot's client holds it (the sections the map or the ground fill,
      // and the emptiness of the others, in the map's columns).
      const columns = bot.world.async.columns
      const seen = []
      for (const key of layout.columns.keys()) {
        const column = columns[key]
        if (!column) continue // not sent to this bot (yet): it gets the server's
        const [cx, cz] = key.split(',').map(Number)
        layout.diff(cx, cz, column, seen)
      }
      for (const [x, y, z, have, want] of seen.slice(0, 5)) add(`${name} sees ${layout.name(have)} at (${x}, ${y}, ${z}), the map says ${layout.name(want)}`)
      if (seen.length > 5) add(`... and ${seen.length - 5} more blocks ${name} sees differ from the map`)
    }
    for (const text of this._seenTraces(layout, agents)) add(text)
    const ms = Math.round(clockMs() - t0)
    return {
      clean: traces.length === 0,
      traces: traces.slice(0, TRACE_LIMIT),
      count: traces.length,
      checked: { columns: Object.keys(serv.overworld.columns).length, map_columns: layout.columns.size, bots: agents.length, entities: Object.keys(serv.entities).length },
      ms
    }
  }

  /**
   * Test only: plants a leftover the game itself never makes (an item on the ground,
   * an item in a bot's inventory, an effect, lost health), for the check to find.
   */
  plant (args) {
    const server = this._embedded()
    const serv = server.serv
    const registry = server.registry
    const agent = this.fleet.agents.get(args.id ?? [...this.fleet.agents.keys()][0])
    if (!agent || !agent.connected) throw new BridgeError('bad_request', `no connected bot ${args.id}`)
    const player = server.playerByName(agent.username)
    const Item = require('prismarine-item')(registry)
    switch (args.kind) {
      case 'item': {
        const pos = Array.isArray(args.pos) ? new Vec3(args.pos[0], args.pos[1], args.pos[2]) : player.position.offset(1, 0.5, 0)
        const entity = serv.spawnObject(registry.entitiesByName.item.id, serv.overworld, pos, { itemId: registry.itemsByName.stone.id, itemCount: 1 })
        return { entity: entity.id }
      }
      case 'inventory':
        player.inventory.updateSlot(36, new Item(registry.itemsByName.stone.id, 1))
        return {}
      case 'effect':
        player.addEffect(1, { duration: 20 * 600 })
        return {}
      case 'health':
        player.updateHealth(10)
        return {}
      default:
        throw new BridgeError('bad_request', 'kind must be item, inventory, effect or health')
    }
  }
}

module.exports = { WarmServer, Layout, seatsOf }
