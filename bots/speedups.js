'use strict'
// Per-tick costs of the bots cut at run time (nothing in node_modules is edited). A
// profile of 8 bots walking at the `max` simulation speed (MAU_CPU_PROFILE, see
// main.js) spent a third of its time on two kinds of waste, both on every physics step
// of every bot and many times more in mineflayer-pathfinder's look-ahead simulations:
//
//  * prismarine-physics builds its player state with `require('minecraft-data')(version)`,
//    which answers from a cache but first builds a new `Version` object by walking
//    every known Minecraft version: about 12 % of the runtime's CPU. The call is now
//    memoised per argument (same answer: the object minecraft-data itself caches).
//  * `bot.blockAt(pos, false)`, the block lookup of physics and pathfinder (hundreds
//    per step), made a new prismarine-block Block with a new Biome and both light
//    levels for every call: about a quarter of the CPU with the garbage it left. With
//    `extraInfos` false (never asked for biome, light or block entity), it now answers
//    with a fresh object whose prototype is one cached Block per block state (shape,
//    bounding box, name and properties depend on the state alone) and whose own
//    `position` is the floored point, as before. Callers that write fields on the
//    answer (the pathfinder's `safe`, `height`, ...) write them on that fresh object.
//    Calls with `extraInfos` (the default) are unchanged.

const { Vec3 } = require('vec3')

let memoised = false

/** Memoises `require('minecraft-data')(version)` for every module that calls it later. */
function memoiseMinecraftData () {
  if (memoised) return
  memoised = true
  const file = require.resolve('minecraft-data')
  require(file)
  const entry = require.cache[file]
  const original = entry.exports
  const answers = new Map()
  function minecraftData (version, preNetty) {
    const key = `${version}|${Boolean(preNetty)}`
    if (answers.has(key)) return answers.get(key)
    const data = original(version, preNetty)
    if (data) answers.set(key, data)
    return data
  }
  Object.assign(minecraftData, original)
  entry.exports = minecraftData
}

/** The fast `blockAt(pos, false)` of one bot (see above). */
function fastBlockAt (bot) {
  const full = bot.blockAt
  const byState = new Map()
  bot.blockAt = function blockAt (point, extraInfos = true) {
    if (extraInfos !== false) return full(point, extraInfos)
    const column = bot.world.getColumnAt(point)
    if (!column) return null // chunk not loaded
    const x = Math.floor(point.x)
    const y = Math.floor(point.y)
    const z = Math.floor(point.z)
    const stateId = column.getBlockStateId(new Vec3(x & 15, y, z & 15))
    let proto = byState.get(stateId)
    if (proto === undefined) {
      proto = full(point, false)
      if (!proto) return null
      delete proto.position
      byState.set(stateId, proto)
    }
    const block = Object.create(proto)
    block.position = new Vec3(x, y, z)
    return block
  }
}

module.exports = { memoiseMinecraftData, fastBlockAt }
