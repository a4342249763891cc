'use strict'
// First-person frames on demand: one off-screen WebGL renderer per bot, drawn only when
// the controller asks (the `render` and `render_init` ops, docs/bridge-protocol.md).
//
// Assembled from prismarine-viewer 1.33's own parts (its `viewer` lib: WorldView feeds
// chunk columns to a WorldRenderer, whose mesher runs in a worker thread; Entities
// builds the textured player model with its name tag) drawn by three 0.128 into a
// node-canvas-webgl canvas (headless-gl). Not the viewer's video-stream API:
//   - one mesher worker per renderer (the viewer's default is 4, ~100 MB each);
//   - the camera is set directly at the bot's eyes (feet + 1.62) with its yaw and
//     pitch (the viewer's own first-person camera eases in over 50 ms);
//   - other entities are not moved by per-tick events (no tweens, no work while
//     programs run): right before a frame, every entity mesh is placed at the pose the
//     bot's client knows, heading included (the viewer's gap: a player that has not
//     moved since the renderer was created faced the wrong way);
//   - players named after a colour (Red, Blue, ...) wear it: their shirt and trousers
//     are dyed in a copy of the viewer's default skin (bots/skins.js);
//   - a frame leaves out the players the request hides from it (`hidden`: the ghosts in
//     a living player's frame): their meshes, name tags included, are not drawn;
//   - pixels are read with gl.readPixels, flipped and written as RGB24 raw / JPEG / PNG
//     files straight from Node (encoding runs in libuv's thread pool).
// headless-gl needs an X server: the bridge is started with DISPLAY set to a private
// Xvfb (controller/xvfb.py). Nothing here is loaded until the first render request.

const fs = require('fs')
const path = require('path')
const { performance } = require('perf_hooks')
const { BridgeError, log, sleep } = require('./util')
const skins = require('./skins')

const DEFAULTS = Object.freeze({ width: 640, height: 360, view_distance: 3 })
const EYE_HEIGHT = 1.62 // Minecraft's standing eye height above the feet
const FOV_DEG = 70 // vertical field of view, Minecraft's default ("Normal")
const BACKGROUND = 'lightblue' // the viewer's sky colour
const SETUP_TIMEOUT_MS = 30000 // first frame: chunks meshed, textures loaded
const MESH_WAIT_MS = 3000 // later frames: wait at most this long for outstanding sections
const COLUMN_WAIT_MS = 5000 // first frame: wait for the bot's own chunk column
const MAX_SIZE = 4096

// ---- libraries (loaded on first use) -----------------------------------------------

let lib = null

/** Loads three, the viewer parts, canvas and headless-gl; throws render_unavailable. */
function loadLib () {
  if (lib) return lib
  if (!process.env.DISPLAY) {
    throw new BridgeError('render_unavailable', 'DISPLAY is not set: headless-gl needs an X server; start the bridge with DISPLAY of an Xvfb (controller/xvfb.py)')
  }
  const viewerDir = path.dirname(require.resolve('prismarine-viewer/package.json'))
  const THREE = require(require.resolve('three', { paths: [viewerDir] }))
  // The viewer's entity code uses a global THREE and its world renderer a global Worker.
  global.THREE = THREE
  if (!global.Worker) global.Worker = require('worker_threads').Worker
  const webgl = require('node-canvas-webgl/lib')
  const canvasLib = require('canvas')
  const { WorldRenderer } = require('prismarine-viewer/viewer/lib/worldrenderer')
  const { Entities } = require('prismarine-viewer/viewer/lib/entities')
  const { WorldView } = require('prismarine-viewer/viewer/lib/worldView')
  const { getVersion } = require('prismarine-viewer/viewer/lib/version')
  const { loadTexture } = require('prismarine-viewer/viewer/lib/utils')
  const entityModels = require('prismarine-viewer/viewer/lib/entity/entities.json')
  lib = { THREE, webgl, canvasLib, WorldRenderer, Entities, WorldView, getVersion, loadTexture, entityModels }
  return lib
}

/** Resolves once a texture the viewer loads by relative path is in its cache. */
function preloadTexture (relPath) {
  return new Promise((resolve) => lib.loadTexture(relPath, resolve))
}

// Entity models are built with the 1.16.4 assets (prismarine-viewer's Entity class);
// their skins are loaded asynchronously on first use, so warm the cache once. The
// players' colour skins (bots/skins.js) are dyed from the same default skin file; if
// that fails, players keep the default skin (logged once).
let skinsReady = null
let colourSkins = new Map() // colour name -> texture, shared by all renderers
function preloadSkins () {
  if (!skinsReady) {
    const files = []
    for (const name of ['player']) {
      const model = lib.entityModels[name]
      for (const tex of Object.values(model ? model.textures : {})) files.push(tex.replace('textures', 'textures/1.16.4') + '.png')
    }
    const publicDir = path.join(path.dirname(require.resolve('prismarine-viewer/package.json')), 'public')
    const dyed = files.length === 0
      ? Promise.resolve()
      : skins.buildColourSkins(lib.THREE, lib.canvasLib, path.join(publicDir, files[0]))
        .then((m) => { colourSkins = m })
        .catch((err) => log('render: colour skins unavailable, players keep the default skin:', err))
    skinsReady = Promise.all([...files.map(preloadTexture), dyed])
  }
  return skinsReady
}

function withTimeout (promise, ms, what) {
  let timer
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new BridgeError('timeout', `timed out after ${ms} ms waiting for ${what}`)), ms)
    })
  ])
}

function disposeObject (root) {
  root.traverse((o) => {
    if (o.geometry) o.geometry.dispose()
    const mats = Array.isArray(o.material) ? o.material : (o.material ? [o.material] : [])
    for (const m of mats) {
      // Name-tag textures belong to one sprite; block and skin textures are shared
      // (the viewer caches them process-wide) and stay.
      if (o.isSprite && m.map) m.map.dispose()
      m.dispose()
    }
  })
}

// ---- one bot's renderer -----------------------------------------------------------

class BotRenderer {
  /**
   * @param {object} agent fleet Agent (id, username, bot, connected)
   * @param {{width: number, height: number, view_distance: number}} settings
   */
  constructor (agent, settings) {
    const { THREE, webgl, canvasLib, WorldRenderer, Entities, WorldView, getVersion } = lib
    this.agent = agent
    this.bot = agent.bot
    this.settings = { ...settings }
    this.width = settings.width
    this.height = settings.height
    this.disposed = false
    this.entityTags = new Map() // entity id -> username the mesh was built with

    const version = getVersion(this.bot.version)
    if (!version) throw new BridgeError('render_unavailable', `the viewer has no assets for Minecraft ${this.bot.version}`)

    this.canvas = webgl.createCanvas(this.width, this.height)
    let renderer
    try {
      renderer = new THREE.WebGLRenderer({ canvas: this.canvas, antialias: false, alpha: false, preserveDrawingBuffer: true })
    } catch (err) {
      throw new BridgeError('render_unavailable', `no WebGL context (is DISPLAY=${process.env.DISPLAY} a running X server?): ${err.message}`)
    }
    this.renderer = renderer
    this.gl = renderer.getContext()

    this.scene = new THREE.Scene()
    this.scene.background = new THREE.Color(BACKGROUND)
    // The viewer's lighting.
    this.scene.add(new THREE.AmbientLight(0xcccccc))
    const sun = new THREE.DirectionalLight(0xffffff, 0.5)
    sun.position.set(1, 1, 0.5).normalize()
    this.scene.add(sun)
    this.camera = new THREE.PerspectiveCamera(FOV_DEG, this.width / this.height, 0.1, 1000)

    this.world = new WorldRenderer(this.scene, 1) // one mesher worker
    this.world.setVersion(version)
    this.entities = new Entities(this.scene)

    const pos = this.bot.entity.position
    this.worldView = new WorldView(this.bot.world, settings.view_distance, pos)
    // The WorldView decides which columns a frame shows (those around the bot's chunk);
    // their meshes are kept when they leave that view and drawn again, not meshed
    // again, when they come back (`inView`, applied in draw()). Meshing a column also
    // re-meshes its four neighbours, and a bot walking across the map would otherwise
    // have the same columns meshed at every frame that follows it (seconds a step,
    // paid while the controller waits). A column the bot's client received anew
    // (`fresh`) is meshed again.
    this.inView = new Set() // 'x,z' (block coordinates) of the columns a frame shows
    this.kept = new Set() // columns the mesher has
    this.fresh = new Set() // kept columns the client has received again since
    this.worldView.on('loadChunk', ({ x, z, chunk }) => {
      if (this.disposed) return
      const key = `${x},${z}`
      this.inView.add(key)
      if (this.kept.has(key) && !this.fresh.has(key)) return
      this.fresh.delete(key)
      this.kept.add(key)
      this.world.addColumn(x, z, chunk)
    })
    this.worldView.on('unloadChunk', ({ x, z }) => { this.inView.delete(`${x},${z}`) })

    // World changes come from the bot's client (cheap: no meshing on this thread).
    this.listeners = [
      ['chunkColumnLoad', (p) => {
        if (this.disposed) return
        const key = `${p.x},${p.z}`
        if (this.kept.has(key)) this.fresh.add(key)
        this.worldView.loadChunk(p).catch(err => log(`render ${agent.id}: chunk load failed:`, err))
      }],
      ['blockUpdate', (oldBlock, newBlock) => {
        const b = newBlock || oldBlock
        if (this.disposed || !b || !b.position) return
        this.world.setBlockStateId(b.position, newBlock ? newBlock.stateId : 0)
      }]
    ]
    for (const [evt, fn] of this.listeners) this.bot.on(evt, fn)

    // Pixel buffers, reused for every frame.
    const n = this.width * this.height
    this.pixels = new Uint8Array(n * 4) // as read: bottom row first
    this.rgb = Buffer.alloc(n * 3)
    this.rgba = new Uint8ClampedArray(n * 4) // flipped, opaque (for JPEG/PNG encoding)
    this.canvas2d = canvasLib.createCanvas(this.width, this.height)
    this.ctx2d = this.canvas2d.getContext('2d')
  }

  /** Loads the chunks around the bot and waits until they are meshed and textures loaded. */
  async init () {
    const bot = this.bot
    const t0 = performance.now()
    // Right after a join or teleport the bot's own column may still be on its way.
    const hasColumn = () => bot.entity && bot.world.getColumnAt(bot.entity.position)
    const deadline = performance.now() + COLUMN_WAIT_MS
    while (!(await hasColumn()) && performance.now() < deadline) await sleep(50)
    await withTimeout((async () => {
      await preloadSkins()
      while (!this.world.material.map) await sleep(10)
      await this.worldView.init(bot.entity.position)
      await this.world.waitForChunksToRender()
    })(), SETUP_TIMEOUT_MS, `${this.agent.id}'s chunks to be meshed`)
    // One frame now compiles the shaders and uploads the textures (~0.1-1 s), so the
    // first requested frame costs what every later one does.
    this.draw()
    this.setupMs = performance.now() - t0
  }

  /** Follows the bot to a new chunk and waits (bounded) for outstanding sections. */
  async prepare () {
    await this.worldView.updatePosition(this.bot.entity.position)
    if (this.world.sectionsOutstanding.size > 0) {
      await withTimeout(this.world.waitForChunksToRender(), MESH_WAIT_MS, 'sections to be meshed')
        .catch(err => log(`render ${this.agent.id}: ${err.message}; drawing what is meshed`))
    }
  }

  /**
   * Places every other entity at the pose the bot's client knows (no easing); a player
   * whose username is in `hidden` is kept but not drawn (its mesh stays for the next
   * frame that shows it).
   * @param {Set<string>} hidden usernames this frame must not show
   */
  syncEntities (hidden = NOBODY) {
    const bot = this.bot
    const meshes = this.entities.entities
    const seen = new Set()
    for (const e of Object.values(bot.entities)) {
      if (!e || e === bot.entity || !e.position || !lib.entityModels[e.name]) continue
      seen.add(e.id)
      const username = e.username
      if (meshes[e.id] && this.entityTags.get(e.id) !== username) this.removeEntity(e.id) // name learnt late
      if (!meshes[e.id]) {
        this.entities.update({ id: e.id, name: e.name, width: e.width, height: e.height, username })
        this.entityTags.set(e.id, username)
        // A player named after a colour wears it (the viewer gives everyone Steve).
        const colour = e.type === 'player' && meshes[e.id] && skins.colourOf(username)
        const skin = colour && colourSkins.get(username.toLowerCase())
        if (skin) skins.dress(meshes[e.id], skin)
      }
      const mesh = meshes[e.id]
      if (!mesh) continue
      mesh.position.set(e.position.x, e.position.y, e.position.z)
      mesh.rotation.set(0, e.yaw || 0, 0)
      mesh.visible = shown(e, hidden)
    }
    for (const id of Object.keys(meshes)) {
      if (!seen.has(Number(id)) && !seen.has(id)) this.removeEntity(id)
    }
  }

  removeEntity (id) {
    const mesh = this.entities.entities[id]
    if (mesh) {
      this.scene.remove(mesh)
      disposeObject(mesh)
      delete this.entities.entities[id]
    }
    this.entityTags.delete(Number(id))
    this.entityTags.delete(id)
  }

  /**
   * Draws one frame from the bot's eyes and reads it back (RGBA, bottom row first).
   * @param {Set<string>} hidden usernames of players this frame must not show
   */
  draw (hidden = NOBODY) {
    const e = this.bot.entity
    for (const [key, mesh] of Object.entries(this.world.sectionMeshs)) {
      const [x, , z] = key.split(',')
      mesh.visible = this.inView.has(`${x},${z}`)
    }
    this.syncEntities(hidden)
    this.camera.position.set(e.position.x, e.position.y + EYE_HEIGHT, e.position.z)
    this.camera.rotation.set(e.pitch, e.yaw, 0, 'ZYX')
    this.renderer.render(this.scene, this.camera)
    const gl = this.gl
    gl.readPixels(0, 0, this.width, this.height, gl.RGBA, gl.UNSIGNED_BYTE, this.pixels)
  }

  /** Converts the last read-back to top-row-first RGB24 (and opaque RGBA if asked). */
  convert (wantRgba) {
    const { width: w, height: h, pixels, rgb, rgba } = this
    for (let y = 0; y < h; y++) {
      let src = (h - 1 - y) * w * 4
      let dst = y * w * 3
      for (let x = 0; x < w; x++, src += 4, dst += 3) {
        rgb[dst] = pixels[src]
        rgb[dst + 1] = pixels[src + 1]
        rgb[dst + 2] = pixels[src + 2]
      }
      if (wantRgba) {
        // Whole rows at once; alpha forced opaque (JPEG/PNG must not see transparency).
        const row = w * 4
        rgba.set(pixels.subarray((h - 1 - y) * row, (h - y) * row), y * row)
      }
    }
    if (wantRgba) {
      for (let i = 3; i < rgba.length; i += 4) rgba[i] = 255
      this.ctx2d.putImageData(new lib.canvasLib.ImageData(rgba, w, h), 0, 0)
    }
  }

  /** Encodes the 2-D canvas (filled by convert(true)) in libuv's thread pool. */
  encode (mime, options) {
    return new Promise((resolve, reject) => {
      this.canvas2d.toBuffer((err, buf) => (err ? reject(err) : resolve(buf)), mime, options)
    })
  }

  dispose () {
    if (this.disposed) return
    this.disposed = true
    for (const [evt, fn] of this.listeners) this.bot.removeListener(evt, fn)
    for (const w of this.world.workers) w.terminate().catch(() => {})
    try {
      for (const id of Object.keys(this.entities.entities)) this.removeEntity(id)
      disposeObject(this.scene)
      try {
        this.renderer.dispose()
      } catch (err) {
        // Its last step stops the animation loop through window.cancelAnimationFrame,
        // which Node lacks; everything before it was released.
      }
      const ext = this.gl.getExtension('STACKGL_destroy_context')
      if (ext) ext.destroy()
    } catch (err) {
      log(`render ${this.agent.id}: dispose failed:`, err)
    }
  }
}

const NOBODY = new Set()

/** Whether a frame draws this entity: not when it is a player the frame hides. */
function shown (entity, hidden) {
  return !(entity.username !== undefined && hidden.has(entity.username))
}

// ---- argument checks --------------------------------------------------------------

function checkAgents (agents, fleet) {
  if (agents === undefined || agents === null) return [...fleet.agents.keys()]
  if (!Array.isArray(agents) || !agents.every(a => typeof a === 'string' && a)) {
    throw new BridgeError('bad_request', 'agents must be a list of agent ids')
  }
  return [...new Set(agents)]
}

function checkFiles (files, ids) {
  if (files === undefined || files === null) return {}
  if (typeof files !== 'object' || Array.isArray(files)) throw new BridgeError('bad_request', 'files must be an object {id: {"raw"?, "jpg"?, "png"?}}')
  const out = {}
  for (const [id, spec] of Object.entries(files)) {
    if (!ids.includes(id)) throw new BridgeError('bad_request', `files.${id}: ${id} is not in agents`)
    if (spec === null) continue
    if (typeof spec !== 'object' || Array.isArray(spec)) throw new BridgeError('bad_request', `files.${id} must be an object {"raw"?, "jpg"?, "png"?}`)
    const one = { raw: null, jpg: null, png: null }
    for (const [kind, p] of Object.entries(spec)) {
      if (!(kind in one)) throw new BridgeError('bad_request', `files.${id}.${kind}: unknown kind (raw, jpg, png)`)
      if (p === null || p === undefined) continue
      if (typeof p !== 'string' || !path.isAbsolute(p)) throw new BridgeError('bad_request', `files.${id}.${kind} must be an absolute path or null, got ${JSON.stringify(p)}`)
      one[kind] = p
    }
    out[id] = one
  }
  return out
}

/**
 * `hidden`: {id: [other id, ...]}, the bots each frame leaves out.
 * @returns {Map<string, Set<string>>} id -> usernames its frame must not show
 */
function checkHidden (hidden, ids, fleet) {
  const out = new Map()
  if (hidden === undefined || hidden === null) return out
  if (typeof hidden !== 'object' || Array.isArray(hidden)) throw new BridgeError('bad_request', 'hidden must be an object {id: [agent id, ...]}')
  for (const [id, others] of Object.entries(hidden)) {
    if (!ids.includes(id)) throw new BridgeError('bad_request', `hidden.${id}: ${id} is not in agents`)
    if (!Array.isArray(others) || !others.every(o => typeof o === 'string' && o)) {
      throw new BridgeError('bad_request', `hidden.${id} must be a list of agent ids`)
    }
    const names = new Set()
    for (const other of others) {
      const agent = fleet.agents.get(other)
      if (!agent) throw new BridgeError('bad_request', `hidden.${id}: unknown agent ${other}`)
      names.add(agent.username)
    }
    out.set(id, names)
  }
  return out
}

function checkSettings (args, current) {
  const s = { ...current }
  for (const key of ['width', 'height', 'view_distance']) {
    const v = args[key]
    if (v === undefined || v === null) continue
    const max = key === 'view_distance' ? 16 : MAX_SIZE
    if (!Number.isInteger(v) || v < 1 || v > max) throw new BridgeError('bad_request', `${key} must be an integer 1..${max}, got ${JSON.stringify(v)}`)
    s[key] = v
  }
  return s
}

const round1 = (x) => Math.round(x * 10) / 10

// ---- the service ------------------------------------------------------------------

class RenderService {
  /** @param {import('./fleet').Fleet} fleet */
  constructor (fleet) {
    this.fleet = fleet
    this.renderers = new Map() // agent id -> BotRenderer
    this.settings = { ...DEFAULTS }
    this.dirs = new Set() // directories known to exist
  }

  /** The agent's live renderer, or null if it has none or it belongs to an old bot or settings. */
  _current (agent) {
    const r = this.renderers.get(agent.id)
    if (!r) return null
    const s = this.settings
    if (r.bot === agent.bot && !r.disposed && r.width === s.width && r.height === s.height && r.settings.view_distance === s.view_distance) return r
    r.dispose()
    this.renderers.delete(agent.id)
    return null
  }

  _drop (id) {
    const r = this.renderers.get(id)
    if (r) {
      r.dispose()
      this.renderers.delete(id)
    }
  }

  /**
   * Makes sure each listed bot has a ready renderer (creating it if needed).
   * @returns {Promise<{ready: Map<string, BotRenderer>, errors: object, setup: object}>}
   */
  async _ensure (ids) {
    loadLib()
    const errors = {}
    const setup = {}
    const ready = new Map()
    const jobs = []
    for (const id of ids) {
      const agent = this.fleet.agents.get(id)
      if (!agent) { errors[id] = `unknown agent ${id}`; continue }
      if (!agent.connected || !agent.bot || !agent.bot.entity) {
        this._drop(id) // its client is gone: free the renderer's memory
        errors[id] = `${id} is not connected`
        continue
      }
      const existing = this._current(agent)
      if (existing) { ready.set(id, existing); continue }
      jobs.push((async () => {
        let r = null
        try {
          r = new BotRenderer(agent, this.settings)
          this.renderers.set(id, r)
          // A bot that disconnects or reconnects loses its renderer (re-created on demand).
          agent.bot.once('end', () => { if (this.renderers.get(id) === r) this._drop(id) })
          await r.init()
          setup[id] = round1(r.setupMs)
          ready.set(id, r)
          log(`render: renderer for ${id} ready in ${Math.round(r.setupMs)} ms`)
        } catch (err) {
          if (err instanceof BridgeError && err.type === 'render_unavailable') throw err
          if (r) this._drop(id)
          errors[id] = `renderer setup failed: ${err.message}`
        }
      })())
    }
    const settled = await Promise.allSettled(jobs)
    const fatal = settled.find(s => s.status === 'rejected')
    if (fatal) {
      for (const id of ids) this._drop(id)
      throw fatal.reason
    }
    return { ready, errors, setup }
  }

  /** `render_init`: create (or keep) renderers; optional width/height/view_distance. */
  async init (args = {}) {
    const t0 = performance.now()
    this.settings = checkSettings(args, this.settings)
    const ids = checkAgents(args.agents, this.fleet)
    const { ready, errors, setup } = await this._ensure(ids)
    const out = {}
    for (const id of ready.keys()) out[id] = setup[id] ?? 0
    return { ready: out, errors, settings: { ...this.settings }, ms: round1(performance.now() - t0) }
  }

  /** `render`: one frame per listed bot, written to the requested files. */
  async render (args = {}) {
    const t0 = performance.now()
    const ids = checkAgents(args.agents, this.fleet)
    const files = checkFiles(args.files, ids)
    const hidden = checkHidden(args.hidden, ids, this.fleet)
    const quality = args.quality ?? 85
    if (!Number.isInteger(quality) || quality < 1 || quality > 100) throw new BridgeError('bad_request', `quality must be an integer 1..100, got ${JSON.stringify(quality)}`)

    const { ready, errors, setup } = await this._ensure(ids)
    // Let packets already on the wire (e.g. blocks just placed) reach the clients.
    await new Promise(resolve => setImmediate(resolve))
    await Promise.all([...ready.values()].map(r => r.prepare().catch(err => log(`render ${r.agent.id}: prepare failed:`, err))))

    const frames = {}
    const writes = []
    for (const [id, r] of ready) {
      if (!r.agent.connected || r.bot !== r.agent.bot) { errors[id] = `${id} disconnected`; continue }
      const want = files[id] || { raw: null, jpg: null, png: null }
      const tStart = performance.now()
      try {
        r.draw(hidden.get(id) || NOBODY)
        r.convert(Boolean(want.jpg || want.png))
      } catch (err) {
        log(`render ${id}: draw failed:`, err)
        errors[id] = `draw failed: ${err.message}`
        continue
      }
      // Copies: the renderer's buffers are reused by its next frame.
      const rgb = want.raw ? Buffer.from(r.rgb) : null
      const jpg = want.jpg ? r.encode('image/jpeg', { quality: quality / 100, progressive: false }) : null
      const png = want.png ? r.encode('image/png', { compressionLevel: 3 }) : null
      writes.push((async () => {
        try {
          const jobs = []
          if (want.raw) jobs.push(this._write(want.raw, rgb))
          if (want.jpg) jobs.push(jpg.then(buf => this._write(want.jpg, buf)))
          if (want.png) jobs.push(png.then(buf => this._write(want.png, buf)))
          await Promise.all(jobs)
          frames[id] = { raw: want.raw, jpg: want.jpg, png: want.png, ms: round1(performance.now() - tStart) }
        } catch (err) {
          errors[id] = `writing the frame failed: ${err.message}`
        }
      })())
    }
    await Promise.all(writes)
    return { frames, errors, setup_ms: setup, ms: round1(performance.now() - t0) }
  }

  async _write (file, buf) {
    const dir = path.dirname(file)
    if (!this.dirs.has(dir)) {
      await fs.promises.mkdir(dir, { recursive: true })
      this.dirs.add(dir)
    }
    await fs.promises.writeFile(file, buf)
  }

  close () {
    for (const id of [...this.renderers.keys()]) this._drop(id)
  }
}

module.exports = { RenderService, DEFAULTS, checkHidden, shown }
