'use strict'
// World generator for the embedded server (passed to flying-squid by absolute path
// as `generation.name`). Flat ground far below the map: bedrock at y = 36, dirt at
// 37..38, grass at 39 (top surface y = 40); everything from y = 40 up is air, so the
// map we build (floor blocks at y = 64, players standing at y = 65) is all there is.
// Why so deep: the ground is 25 blocks below the floor, more than the pathfinder will
// ever drop (maxDropDown 4), so paths never leave the built map through an open edge
// to walk around walls on the ground outside, and unreachable goals fail fast (the
// search stays on the map). Yet a player who spawns before the floor is built, or
// falls off it, lands on solid ground instead of falling into the void (a teleport
// brings it back). Sky light is full everywhere (no lighting engine runs on the
// server) so renderers see a lit world.

const { Vec3 } = require('vec3')

const LAYERS = [
  [36, 'bedrock'],
  [37, 'dirt'],
  [38, 'dirt'],
  [39, 'grass_block']
]
const MIN_Y = -64
const WORLD_HEIGHT = 384

module.exports = function flatGeneration (options) {
  const { registry } = options
  const Chunk = require('prismarine-chunk')(registry)
  const layers = LAYERS.map(([y, name]) => [y, registry.blocksByName[name].defaultState])
  const biome = registry.biomesByName.plains.id

  return function generateChunk () {
    const chunk = new Chunk({ minY: MIN_Y, worldHeight: WORLD_HEIGHT })
    const p = new Vec3(0, 0, 0)
    for (let x = 0; x < 16; x++) {
      for (let z = 0; z < 16; z++) {
        p.x = x
        p.z = z
        for (const [y, stateId] of layers) {
          p.y = y
          chunk.setBlockStateId(p, stateId)
        }
        for (let y = MIN_Y; y < MIN_Y + WORLD_HEIGHT; y++) {
          p.y = y
          chunk.setSkyLight(p, 15)
        }
      }
    }
    for (let x = 0; x < 16; x += 4) {
      for (let z = 0; z < 16; z += 4) {
        for (let y = MIN_Y; y < MIN_Y + WORLD_HEIGHT; y += 4) {
          p.set(x, y, z)
          chunk.setBiome(p, biome)
        }
      }
    }
    return chunk
  }
}

// What a fresh column holds, for the warm server's check (bots/reset.js).
module.exports.LAYERS = LAYERS
module.exports.MIN_Y = MIN_Y
module.exports.WORLD_HEIGHT = WORLD_HEIGHT
