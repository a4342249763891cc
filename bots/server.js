'use strict'
// The embedded Minecraft server: flying-squid, offline mode, loopback only, with the
// fixes of squid-fixes.js. Also the server-side operations the bridge offers in
// embedded mode (set_blocks, broadcast, teleport).

const path = require('path')
const { Vec3 } = require('vec3')
const { applySquidFixes } = require('./squid-fixes')
const { BridgeError, log, sleep, waitFor } = require('./util')

const GAME_MODE_ADVENTURE = 2 // cannot break or place blocks; attacks do no damage (pvp.js)
const DIFFICULTY_PEACEFUL = 0
const NOON = 6000

/**
 * Resolves a block name ("stone_bricks", "minecraft:stone_bricks") to its default
 * state id in `registry`; throws BridgeError('unknown_block') otherwise.
 */
function blockStateId (registry, name) {
  const bare = typeof name === 'string' && name.startsWith('minecraft:') ? name.slice(10) : name
  const block = typeof bare === 'string' ? registry.blocksByName[bare] : undefined
  if (!block) throw new BridgeError('unknown_block', `unknown block name ${JSON.stringify(name)} for Minecraft ${registry.version.minecraftVersion}`)
  return block.defaultState
}

class EmbeddedServer {
  constructor (serv, settings) {
    this.serv = serv
    this.settings = settings
    this.registry = serv.registry
    this.teleportId = 1000
  }

  /**
   * Starts flying-squid and resolves once it listens and its plugins are ready.
   * @param {{host: string, port: number, version: string, spawn: number[], view_distance: number, ops?: string[]}} args
   */
  static async start (args) {
    const host = args.host ?? '127.0.0.1'
    const version = args.version ?? '1.20.1'
    const spawn = args.spawn ?? [0.5, 65, 0.5]
    const viewDistance = args.view_distance ?? 4
    const settings = {
      motd: 'MineAmongUs',
      host,
      port: args.port ?? 0,
      'max-players': 32,
      'online-mode': false,
      logging: false, // no logs/ folder in the working directory; console output still goes to the log file
      gameMode: GAME_MODE_ADVENTURE,
      difficulty: DIFFICULTY_PEACEFUL,
      worldFolder: undefined, // nothing is saved: every run starts from the same empty world
      generation: { name: path.join(__dirname, 'flatgen.js'), options: {} },
      kickTimeout: 30000,
      plugins: {},
      modpe: false,
      'view-distance': viewDistance,
      'player-list-text': { header: { text: 'MineAmongUs' }, footer: { text: '' } },
      'everybody-op': false,
      'max-entities': 100,
      version,
      // A truthy `debug` also disables flying-squid's errorHandler plugin, which would
      // quit the server and exit the process on any uncaught exception.
      debug: process.env.MAU_SQUID_DEBUG ? (msg) => log('[squid]', msg) : () => {}
    }
    const mcServer = require('flying-squid')
    const serv = mcServer.createMCServer(settings)
    applySquidFixes(serv, { spawn, ops: args.ops || [], viewDistance })
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new BridgeError('server_start', 'flying-squid did not become ready within 15 s')), 15000)
      serv.once('error', (err) => {
        clearTimeout(timer)
        reject(new BridgeError('server_start', `flying-squid failed to start: ${err.message}`))
      })
      const check = () => {
        if (serv.isReady) {
          clearTimeout(timer)
          resolve()
        }
      }
      serv.on('ready', check)
      check()
    })
    // Fixed daylight for a stable picture.
    serv.doDaylightCycle = false
    serv.setTime(NOON)
    const server = new EmbeddedServer(serv, settings)
    server.port = serv.listeningPort ?? serv._server.socketServer.address().port
    server.host = host
    server.version = version
    log(`embedded server listening on ${host}:${server.port} (Minecraft ${version})`)
    return server
  }

  /** Players that finished joining (see squid-fixes #3). */
  joinedPlayers () {
    return this.serv.players.filter(p => p._mauJoined)
  }

  playerByName (username) {
    return this.serv.players.find(p => p.username === username) || null
  }

  /**
   * Sets many blocks at once: the world is written first, then each player that has
   * the column loaded gets one multi_block_change per 16^3 section. No block updates
   * (physics, redstone) run: the map is static scenery.
   * @param {Array<[number, number, number, string]>} blocks
   * @returns {Promise<number>} number of blocks set
   */
  async setBlocks (blocks) {
    const { registry } = this
    const cache = new Map()
    const resolved = new Array(blocks.length)
    // Validate everything before touching the world.
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i]
      if (!Array.isArray(b) || b.length !== 4 || !Number.isInteger(b[0]) || !Number.isInteger(b[1]) || !Number.isInteger(b[2]) || typeof b[3] !== 'string') {
        throw new BridgeError('bad_request', `block #${i} must be [x, y, z, "name"] with integer coordinates, got ${JSON.stringify(b)}`)
      }
      if (b[1] < -64 || b[1] > 319) throw new BridgeError('bad_request', `block #${i} y=${b[1]} is outside the world (-64..319)`)
      let id = cache.get(b[3])
      if (id === undefined) {
        id = blockStateId(registry, b[3])
        cache.set(b[3], id)
      }
      resolved[i] = [b[0], b[1], b[2], id]
    }
    return this.setBlockStates(resolved)
  }

  /**
   * Sets blocks given by state id (`[x, y, z, stateId]`, already validated): the world
   * is written first, then each player that has the column loaded gets one
   * multi_block_change per 16^3 section.
   * @param {Array<[number, number, number, number]>} states
   * @returns {Promise<number>} number of blocks set
   */
  async setBlockStates (states) {
    const world = this.serv.overworld
    // section key -> { cx, sy, cz, records: Map(local -> stateId) }
    const sections = new Map()
    const pos = new Vec3(0, 0, 0)
    for (const [x, y, z, stateId] of states) {
      pos.set(x, y, z)
      await world.setBlockStateId(pos, stateId)
      const cx = Math.floor(x / 16)
      const sy = Math.floor(y / 16)
      const cz = Math.floor(z / 16)
      const key = `${cx},${sy},${cz}`
      let sec = sections.get(key)
      if (!sec) {
        sec = { cx, sy, cz, records: new Map() }
        sections.set(key, sec)
      }
      const local = ((x - cx * 16) << 8) | ((z - cz * 16) << 4) | (y - sy * 16)
      sec.records.set(local, stateId) // last write wins, as in the world
    }
    for (const player of this.joinedPlayers()) {
      if (player.world !== world) continue
      for (const sec of sections.values()) {
        if (!player.loadedChunks || player.loadedChunks[`${sec.cx},${sec.cz}`] === undefined) continue
        const records = []
        for (const [local, stateId] of sec.records) records.push(stateId * 4096 + local)
        player._client.write('multi_block_change', {
          chunkCoordinates: { x: sec.cx, y: sec.sy, z: sec.cz },
          suppressLightUpdates: true, // field of older layouts; ignored by 1.20+
          records
        })
      }
    }
    return states.length
  }

  /** A system chat line to every joined player (not attributed to any player). */
  broadcast (text) {
    for (const player of this.joinedPlayers()) {
      // An object component: the text is taken literally (flying-squid would parse
      // '&' colour codes in a plain string).
      player.system({ text, color: 'yellow' })
    }
  }

  /**
   * Server-side teleport of a joined player: moves the server's entity (watchers get
   * the new position) and sends the player a position packet with yaw/pitch in
   * degrees (flying-squid's own teleport sends its byte-scaled yaw as degrees).
   */
  async teleport (username, pos, yawDeg, pitchDeg) {
    const player = this.playerByName(username)
    if (!player) throw new BridgeError('not_found', `no player named ${username} on the server`)
    if (!player._mauLoginDone) {
      // A teleport before the end of login would be undone by it.
      await waitFor(() => player._mauLoginDone || player.disconnected, 10000, 50, `login of ${username} to finish`)
      if (player.disconnected) throw new BridgeError('disconnected', `${username} disconnected`)
    }
    const toByte = (deg) => {
      let b = Math.floor((deg % 360) * 256 / 360)
      if (b < -128) b += 256
      else if (b > 127) b -= 256
      return b
    }
    player.yaw = toByte(yawDeg)
    player.pitch = toByte(pitchDeg)
    const target = new Vec3(pos[0], pos[1], pos[2])
    const teleportId = ++this.teleportId
    // From here until the client confirms this id, its movement packets are stale.
    player._mauPendingTeleport = { id: teleportId, at: Date.now() }
    await player.sendPosition(target, false, true)
    // A move of less than 8 blocks reaches watchers as a relative move, which carries
    // no heading, and the client's own look packet for the same heading is then
    // deduplicated by the server: tell watchers the heading explicitly.
    player._writeOthersNearby('entity_look', { entityId: player.id, yaw: player.yaw, pitch: player.pitch, onGround: Boolean(player.onGround) })
    player._writeOthersNearby('entity_head_rotation', { entityId: player.id, headYaw: player.yaw })
    player._client.write('position', {
      x: target.x,
      y: target.y,
      z: target.z,
      yaw: yawDeg,
      pitch: pitchDeg,
      flags: 0,
      teleportId,
      dismountVehicle: false
    })
  }

  async close () {
    const serv = this.serv
    try {
      for (const p of serv.players.slice()) {
        try { p._client.end('Server closed') } catch (err) { log('kick failed', err) }
      }
      await Promise.race([serv.destroy(), sleep(1500)])
    } catch (err) {
      log('server close failed', err)
    }
  }
}

module.exports = { EmbeddedServer, blockStateId, GAME_MODE_ADVENTURE, NOON }
