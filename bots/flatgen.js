'use strict'
// World generator for the embedded server (passed to flying-squid by absolute path
// as `generation.name`). A thin flat ground whose top surface is at y = 63:
// bedrock at y = 59, dirt at 60..61, grass at 62. Everything from y = 63 up is air,
// so the map we build (floor blocks at y = 64, players standing at y = 65) is all
// there is above ground, and a player who spawns or steps off the built floor lands
// on solid ground instead of falling into the void. Sky light is full everywhere
// (no lighting engine runs on the server) so renderers see a lit world.

const { Vec3 } = require('vec3')

const LAYERS = [
  [59, 'bedrock'],
  [60, 'dirt'],
  [61, 'dirt'],
  [62, 'grass_block']
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
