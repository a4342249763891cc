'use strict'
// Runtime fixes for flying-squid 1.12.0 defects (see docs in platform-notes), applied
// to one server instance from outside: nothing in node_modules is edited. Each fix
// replaces a function that flying-squid looks up at call time, so the order matters:
// server-level functions are replaced right after createMCServer() (its plugins
// install them synchronously); per-player functions are replaced in the `newPlayer`
// event, which flying-squid emits after every player plugin ran and before login().
//
// Fixed here:
//  * #2 the joining player never receives the player list: flying-squid's
//    _sendPlayerList writes the full list to everybody *except* the newcomer.
//  * #3 a joining player is visible to entity lookups before its login completes, so
//    spawn packets are exchanged before the player_info that names the player (the
//    client drops them) or before the newcomer's own login packet (lost), and the
//    server then believes they were delivered. Players are hidden from every lookup
//    until they have been sent the player list (flag `_mauJoined`).
//  * on 1.19.3+ a leaving player is announced with a player_info "remove" action that
//    does not exist any more (it became the player_remove packet): clients kept the
//    departed player in their list forever.
//  * the server never finishes a login until the client sends a `look` or `flying`
//    packet; a mineflayer bot that stands still may never send one, and a teleport
//    made before that point is undone when login finishes (the server re-sends the
//    spawn position). Any movement packet now completes the login, and the end of
//    login is recorded (`_mauLoginDone`, event `mauLoginDone`) so teleports can wait
//    for it.
//  * no teleport handshake: movement packets a client sent before it processed a
//    server-side teleport are applied after it and move the player back (others then
//    see it at the old place until its next move). Stale packets are now ignored until
//    the client confirms the teleport, as vanilla does.
//  * every player gets a 5 s interval timer (latency updates) that is never cleared and
//    keeps writing to the closed connection after the player left: writes to an
//    ended connection are dropped.
//  * player chat is relayed through flying-squid's '&' colour-code parser, which eats
//    '&' and the character after it from what players say: relayed literally.
//  * flying-squid's per-player error handler would quit the server and exit the
//    process on any uncaught exception; it is disabled through the `debug` setting
//    (see server.js), and the bridge handles uncaught exceptions itself.
//  * a chunk column that no player has loaded any more is dropped from the world, and
//    with nothing saved to disk it comes back as freshly generated ground: the map
//    that set_blocks built there would be gone (all bots on one side of a map wider
//    than their view). Columns now stay in the world for good.
//  * every 16 blocks a player walks, the chunks behind its view are unloaded and
//    those ahead sent again, each a map_chunk to serialise, compress and parse: with
//    eight bots crossing a map this was a large share of the runtime's CPU per tick.
//    A player now keeps every chunk it was sent (the map and the ground around it,
//    a bounded set) and is only sent the ones new to it.
//
// Not needed on 1.20.1 (so not fixed): #1 (no entity type for players on 1.20.2+) and
// #4 (teleport packet layout on 1.21.2+).

const { Vec3 } = require('vec3')

const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

function applySquidFixes (serv, { spawn, ops, viewDistance }) {
  const opSet = new Set(ops || [])

  // --- columns stay in the world (see above) -------------------------------------------
  serv._worldUnloadPlayerChunk = (chunkX, chunkZ, player) => {
    const id = chunkX + ',' + chunkZ
    delete player.loadedChunks[id]
    if (serv._worldChunksUsed[id] > 0) serv._worldChunksUsed[id]--
    return false
  }

  // --- #3: hide players that have not finished joining -----------------------------
  const origGetNearbyEntities = serv.getNearbyEntities
  serv.getNearbyEntities = (opts) => origGetNearbyEntities(opts).filter(e => e.type !== 'player' || e._mauJoined)
  const origGetNearby = serv.getNearby
  serv.getNearby = (opts) => origGetNearby(opts).filter(p => p._mauJoined)

  // Deterministic spawn point (flying-squid picks a random one near (15, 81, 15)).
  if (spawn) {
    const spawnPoint = new Vec3(spawn[0], spawn[1], spawn[2])
    serv.getSpawnPoint = async () => spawnPoint.clone()
  }

  const playerInfoEntry = (p) => ({
    uuid: p.uuid,
    player: { name: p.username, properties: p.profileProperties || [] },
    gamemode: p.gameMode,
    latency: p._client.latency
  })

  serv.on('newPlayer', (player) => {
    const client = player._client

    // Operators by name (the embedded server has no ops.json). A getter, because
    // login() assigns player.op from the `everybody-op` setting.
    Object.defineProperty(player, 'op', {
      configurable: true,
      get: () => opSet.has(client.username),
      set: () => {}
    })

    player.getOtherPlayers = () => serv.players.filter(p => p !== player && p._mauJoined)

    // Spawning/despawning neighbours is meaningless before the client is logged in
    // (position packets during login would otherwise announce the newcomer early).
    const origUpdateAndSpawn = player.updateAndSpawn
    player.updateAndSpawn = () => {
      if (!player._mauJoined) return
      origUpdateAndSpawn()
    }

    // --- #2: the newcomer gets the full list; the others learn about the newcomer.
    // (login.js redefines serv._sendPlayerList for every player, hence per player.)
    serv._sendPlayerList = (toPlayer) => {
      const joined = serv.players.filter(p => p._mauJoined && p !== toPlayer)
      if (serv.supportFeature('playerInfoActionIsBitfield')) {
        toPlayer._client.write('player_info', {
          action: { add_player: true },
          data: joined.concat([toPlayer]).map(playerInfoEntry)
        })
        for (const other of joined) {
          other._client.write('player_info', { action: { add_player: true }, data: [playerInfoEntry(toPlayer)] })
        }
      } else {
        const legacy = (p) => ({ uuid: p.uuid, name: p.username, properties: p.profileProperties || [], gamemode: p.gameMode, ping: p._client.latency })
        toPlayer._client.write('player_info', { action: 'add_player', data: joined.concat([toPlayer]).map(legacy) })
        for (const other of joined) other._client.write('player_info', { action: 'add_player', data: [legacy(toPlayer)] })
      }
      toPlayer._mauJoined = true
    }

    // Leaving player: 1.19.3+ uses the player_remove packet.
    serv._sendPlayerEventLeave = (leaving) => {
      const others = serv.players.filter(p => p !== leaving && p._mauJoined)
      for (const other of others) {
        if (serv.supportFeature('playerInfoActionIsBitfield')) {
          other._client.write('player_remove', { players: [leaving.uuid] })
        } else {
          other._client.write('player_info', { action: 'remove_player', data: [{ uuid: leaving.uuid }] })
        }
      }
    }

    // Complete the login on the client's first movement packet of any kind.
    player.waitPlayerLogin = () => new Promise(resolve => {
      const events = ['flying', 'look', 'position', 'position_look']
      const listener = () => {
        for (const e of events) client.removeListener(e, listener)
        resolve()
      }
      for (const e of events) client.on(e, listener)
    })

    // Teleport handshake as in vanilla: after a server-side teleport (EmbeddedServer.
    // teleport sets _mauPendingTeleport), movement packets the client sent before it
    // confirmed that teleport are stale and would move the player back, so they are
    // ignored until the matching teleport_confirm (or 5 s, should it never come).
    player._mauPendingTeleport = null
    const origSendPosition = player.sendPosition
    player.sendPosition = (position, onGround, teleport = false) => {
      const pending = player._mauPendingTeleport
      if (!teleport && pending !== null) {
        if (Date.now() - pending.at < 5000) return Promise.resolve(false)
        player._mauPendingTeleport = null
      }
      return origSendPosition(position, onGround, teleport)
    }
    client.on('teleport_confirm', ({ teleportId }) => {
      const pending = player._mauPendingTeleport
      if (pending !== null && pending.id === teleportId) player._mauPendingTeleport = null
    })

    const origLogin = player.login
    player.login = async () => {
      await origLogin()
      if (!player.disconnected && !client.ended) {
        player._mauLoginDone = true
        player.emit('mauLoginDone')
      }
    }

    // Player chat is relayed as the plain string "<Name> text", which flying-squid
    // parses for '&' colour codes (an '&' in what a player said would be eaten).
    // Relay such lines as a literal text component instead.
    const origChat = player.chat
    player.chat = (message) => {
      if (typeof message === 'string' && /^<[A-Za-z0-9_]{1,16}> /.test(message) && serv.supportFeature('signedChat')) {
        return player.system({ text: message })
      }
      return origChat(message)
    }

    // --- chunks are sent once and kept (see above): the nearest first, as flying-squid
    // orders them, 5 ms apart as its own sending is.
    player.worldSendRestOfChunks = async () => {
      player.sendingChunks = true
      try {
        player.lastPositionChunkUpdated = player.position
        const view = Math.min(player.view ?? viewDistance, viewDistance)
        const cx = Math.floor(player.position.x / 16)
        const cz = Math.floor(player.position.z / 16)
        const wanted = []
        for (let dx = -view; dx <= view; dx++) {
          for (let dz = -view; dz <= view; dz++) wanted.push([cx + dx, cz + dz, Math.max(Math.abs(dx), Math.abs(dz))])
        }
        wanted.sort((a, b) => a[2] - b[2])
        for (const [x, z] of wanted) {
          if (player.disconnected || client.ended) return
          if (!serv._worldLoadPlayerChunk(x, z, player)) continue
          const column = await player.world.getColumn(x, z)
          await player.sendChunk(x, z, column)
          await sleep(5)
        }
      } finally {
        player.sendingChunks = false
      }
    }
    player.worldSendAllChunks = player.worldSendRestOfChunks

    // Drop writes to a connection that has ended (leaked timers keep writing).
    client.once('end', () => {
      client.ended = true
      client.write = () => {}
    })
  })
}

module.exports = { applySquidFixes }
