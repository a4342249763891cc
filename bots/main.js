'use strict'
// MineAmongUs bot runtime: the Node side of the bridge (docs/bridge-protocol.md).
//
// Requests arrive as newline-delimited JSON on fd 3, responses and events leave on
// fd 4. stdout/stderr are for logs only (flying-squid prints to stdout). The process
// exits when fd 3 reaches end-of-file, i.e. when the controller is gone.
//
// Usage (normally started by controller/bridge.py):
//   node bots/main.js 3<requests 4>responses

const fs = require('fs')
const net = require('net')
const path = require('path')
const readline = require('readline')
const { BridgeError, gameClock, log, tick, sleep, physics, parseSpeed } = require('./util')
const { memoiseMinecraftData } = require('./speedups')
memoiseMinecraftData() // before any bot or server loads its version data
const { EmbeddedServer } = require('./server')
const { Fleet } = require('./fleet')
const { ProgramRunner } = require('./programs')
const { WarmServer } = require('./reset')

const REQUEST_FD = 3
const RESPONSE_FD = 4
const PACKAGES = ['flying-squid', 'mineflayer', 'mineflayer-pathfinder', 'minecraft-protocol', 'minecraft-data']

// ---- output channel -----------------------------------------------------------------

let outputBroken = false

/** Writes one JSON line to fd 4 (synchronously, so lines never interleave or get lost at exit). */
function send (obj) {
  if (outputBroken) return
  const line = JSON.stringify(obj) + '\n'
  try {
    let buf = Buffer.from(line, 'utf8')
    while (buf.length > 0) {
      let n
      try {
        n = fs.writeSync(RESPONSE_FD, buf)
      } catch (err) {
        if (err.code === 'EAGAIN') { // a non-blocking pipe that is full: retry
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2)
          continue
        }
        throw err
      }
      buf = buf.subarray(n)
    }
  } catch (err) {
    outputBroken = true
    log('cannot write to fd 4 (controller gone?):', err.message)
    shutdown(1)
  }
}

const emitEvent = (event) => send(event)

// ---- state ------------------------------------------------------------------------

let server = null
const fleet = new Fleet(emitEvent)
const runner = new ProgramRunner(fleet)
let shuttingDown = false
let renderService = null
// A warm server's reset and its check between games (bots/reset.js).
const warm = new WarmServer({ fleet, runner, server: () => server })

// First-person frames (bots/render.js), loaded on first use: the runtime starts and
// serves every other op without an X server.
function renderer () {
  if (!renderService) {
    const { RenderService } = require('./render')
    renderService = new RenderService(fleet)
  }
  return renderService
}

function packageVersion (name) {
  const candidates = [path.join(__dirname, '..', 'node_modules', name, 'package.json')]
  try { candidates.push(require.resolve(`${name}/package.json`)) } catch (err) { /* not resolvable this way */ }
  for (const file of candidates) {
    try { return JSON.parse(fs.readFileSync(file, 'utf8')).version } catch (err) { /* next */ }
  }
  return null
}

// A CPU profile of the batches (`MAU_CPU_PROFILE=/abs/file.cpuprofile`): started with
// the first run_programs, so start-up (chunk generation, joins) is left out, and
// written at shutdown. Open it in Chrome's DevTools (Performance panel).
let profiler = null

function startProfile () {
  const file = process.env.MAU_CPU_PROFILE
  if (!file || profiler) return
  const inspector = require('inspector')
  profiler = { session: new inspector.Session(), file }
  profiler.session.connect()
  profiler.session.post('Profiler.enable', () => profiler.session.post('Profiler.start'))
  log(`CPU profile of the batches: ${file}`)
}

function writeProfile () {
  if (!profiler) return Promise.resolve()
  const { session, file } = profiler
  return new Promise(resolve => {
    session.post('Profiler.stop', (err, result) => {
      if (err) log('CPU profile failed:', err)
      else fs.writeFileSync(file, JSON.stringify(result.profile))
      resolve()
    })
  })
}

// ---- operations -------------------------------------------------------------------

const handlers = {
  async hello () {
    const packages = {}
    for (const p of PACKAGES) packages[p] = packageVersion(p)
    return { node: process.version, packages, tick: tick(), speed: physics.speedName() }
  },

  async start_server (args) {
    if (server) throw new BridgeError('bad_state', 'the server is already running')
    if (args.host !== undefined && args.host !== '127.0.0.1' && args.host !== 'localhost' && args.host !== '::1') {
      throw new BridgeError('bad_request', `the embedded server binds to loopback only, got host ${args.host}`)
    }
    if (args.port !== undefined && (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535)) {
      throw new BridgeError('bad_request', `port must be an integer 0..65535, got ${args.port}`)
    }
    const speed = parseSpeed(args.speed)
    server = await EmbeddedServer.start(args)
    // The pace of a batch's physics rounds; above real time, each round also waits
    // until the server has passed the last one's movements on (fleet.netQuiet).
    physics.quiet = () => fleet.netQuiet()
    physics.setSpeed(speed === Infinity ? 'max' : speed)
    log(`simulation speed: ${physics.speedName()}`)
    return { host: server.host, port: server.port, version: server.version, speed: physics.speedName() }
  },

  async connect (args) {
    const result = await fleet.connect(args, server)
    if (!args.external) warm.recordConnect(args.bots)
    return result
  },

  async set_blocks (args) {
    const t0 = Date.now()
    let count
    if (fleet.ops) {
      count = await fleet.setBlocks(args.blocks)
    } else if (server) {
      // Building before any bot joined: straight to the embedded world.
      if (!Array.isArray(args.blocks)) throw new BridgeError('bad_request', 'blocks must be a list of [x, y, z, name]')
      count = await server.setBlocks(args.blocks)
      warm.recordBuild(args.blocks) // the map a fresh server is built with
    } else {
      throw new BridgeError('bad_state', 'no server: call start_server (or connect with external: true) first')
    }
    log(`set_blocks: ${count} blocks in ${Date.now() - t0} ms`)
    return { count }
  },

  async run_programs (args) {
    startProfile()
    return runner.run(args)
  },

  // The controller's answer to a `program_event` of the running batch.
  async directive (args) {
    return runner.directive(args)
  },

  async teleport (args) {
    return fleet.teleport(args.moves)
  },

  async broadcast (args) {
    if (fleet.ops) await fleet.broadcast(args.text)
    else if (server) {
      if (typeof args.text !== 'string' || !args.text) throw new BridgeError('bad_request', 'text must be a non-empty string')
      server.broadcast(args.text)
    } else throw new BridgeError('bad_state', 'no server')
    return {}
  },

  async state () {
    return { tick: tick(), players: fleet.poses() }
  },

  // Meeting talk time: the stopped game clock jumps forward (no program runs).
  async advance_clock (args) {
    gameClock.advance(args.ticks)
    return { tick: tick() }
  },

  async render_init (args) {
    return renderer().init(args)
  },

  async render (args) {
    return renderer().render(args)
  },

  async inspect (args) {
    const out = fleet.inspect(args)
    out.physics = { speed: physics.speedName(), ...physics.stats }
    return out
  },

  // A warm server between games: everything a game changed put back (blocks, entities,
  // inventories, effects, health, seats, chat, the game clock).
  async reset (args) {
    return warm.reset(args)
  },

  // Compares the world with what a fresh server would hold; lists every difference.
  async verify_clean (args) {
    return warm.verify(args)
  },

  // Test only: a leftover no game makes (an item, an effect, lost health).
  async debug_plant (args) {
    return warm.plant(args)
  },

  async drop (args) {
    fleet.drop(args.id)
    return {}
  },

  async reconnect (args) {
    return fleet.reconnect(args.id, args.pos, args.yaw ?? 0)
  },

  // Fault injection for tests: an exception nobody catches, thrown while this request
  // waits forever. The uncaught-exception handler must answer it (ok: false) and the
  // runtime must keep serving requests.
  async debug_fault (args) {
    if (args.kind !== 'uncaught') throw new BridgeError('bad_request', 'kind must be "uncaught"')
    setTimeout(() => { throw new Error('injected fault') }, 10)
    return new Promise(() => {})
  },

  async shutdown () {
    setImmediate(() => shutdown(0))
    return {}
  }
}

// Ops that may run while another request is in flight (read-only, instant).
// `directive` must be: it answers the batch that `run_programs` is still running.
const CONCURRENT_OPS = new Set(['state', 'hello', 'inspect', 'directive'])

// ---- request loop -----------------------------------------------------------------

// id -> { op, answered, release }: `release` resolves `done`, which the serial queue
// waits on, so a request answered by the uncaught-exception handler frees the queue
// even if its handler never settles.
const inFlight = new Map()
let serial = Promise.resolve()

function answer (id, payload) {
  const entry = inFlight.get(id)
  if (entry) {
    if (entry.answered) return
    entry.answered = true
    inFlight.delete(id)
    entry.release()
  }
  send({ id, ...payload })
}

async function execute (id, op, args) {
  const t0 = Date.now()
  try {
    const result = await handlers[op](args || {})
    answer(id, { ok: true, result: result ?? {} })
  } catch (err) {
    const type = err instanceof BridgeError ? err.type : 'internal'
    if (type === 'internal') log(`request ${id} (${op}) failed:`, err)
    else log(`request ${id} (${op}) failed: [${type}] ${err.message}`)
    answer(id, { ok: false, error: { type, message: err.message || String(err) } })
  } finally {
    if (op !== 'state' && op !== 'directive') log(`request ${id} (${op}) done in ${Date.now() - t0} ms`)
  }
}

function onLine (line) {
  if (!line.trim()) return
  let msg
  try {
    msg = JSON.parse(line)
  } catch (err) {
    log('unparsable request line:', line.slice(0, 200))
    send({ id: null, ok: false, error: { type: 'bad_request', message: `invalid JSON: ${err.message}` } })
    return
  }
  const { id, op, args } = msg || {}
  if (!handlers[op] || !Object.prototype.hasOwnProperty.call(handlers, op)) {
    send({ id: id ?? null, ok: false, error: { type: 'unknown_op', message: `unknown op ${JSON.stringify(op)}` } })
    return
  }
  if (shuttingDown && op !== 'shutdown') {
    send({ id, ok: false, error: { type: 'shutting_down', message: 'the runtime is shutting down' } })
    return
  }
  let release
  const done = new Promise(resolve => { release = resolve })
  const entry = { op, answered: false, started: false, release }
  inFlight.set(id, entry)
  if (CONCURRENT_OPS.has(op)) {
    execute(id, op, args)
  } else {
    serial = serial.then(() => {
      entry.started = true
      execute(id, op, args)
      return done
    })
  }
}

// ---- lifecycle --------------------------------------------------------------------

async function shutdown (code) {
  if (shuttingDown) return
  shuttingDown = true
  // Never hang on the way out.
  setTimeout(() => process.exit(code), 4000).unref()
  try {
    await writeProfile()
    if (renderService) renderService.close()
    await Promise.race([fleet.quitAll(), sleep(2000)])
    if (server) await Promise.race([server.close(), sleep(1500)])
  } catch (err) {
    log('error during shutdown:', err)
  }
  process.exit(code)
}

process.on('uncaughtException', (err) => {
  log('uncaught exception:', err)
  // Whatever was in flight may now never finish: answer it instead of hanging.
  for (const [id, entry] of inFlight) {
    if (entry.started) answer(id, { ok: false, error: { type: 'uncaught_exception', message: String(err && err.stack ? err.stack.split('\n')[0] : err) } })
  }
})
process.on('unhandledRejection', (reason) => {
  log('unhandled rejection:', reason instanceof Error ? reason : String(reason))
})

function main () {
  let input
  try {
    input = new net.Socket({ fd: REQUEST_FD, readable: true, writable: false })
  } catch (err) {
    log(`fd ${REQUEST_FD} is not open: start this through controller/bridge.py (${err.message})`)
    process.exit(2)
  }
  try {
    fs.fstatSync(RESPONSE_FD)
  } catch (err) {
    log(`fd ${RESPONSE_FD} is not open: start this through controller/bridge.py`)
    process.exit(2)
  }
  const rl = readline.createInterface({ input, crlfDelay: Infinity })
  rl.on('line', onLine)
  rl.on('close', () => {
    log('request channel closed: exiting')
    shutdown(0)
  })
  input.on('error', (err) => {
    log('request channel error:', err.message)
    shutdown(1)
  })
  send({ event: 'ready', tick: tick(), pid: process.pid })
  log(`bot runtime ready (pid ${process.pid}, node ${process.version})`)
}

main()
