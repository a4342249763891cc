'use strict'
// Reads JavaScript source and prints its ESTree syntax tree as JSON. The source is
// parsed only: nothing here evaluates, compiles or loads it (no eval, no Function, no
// vm, no require of the text). acorn is found through NODE_PATH (the project's
// node_modules), set by harness_aria/codegen/parser.py.
//
// One-shot (default): the source on stdin, one JSON object on stdout.
// `--serve`: one request a line on stdin, `{"id": N, "code": "..."}`, one answer a line
// on stdout, `{"id": N, "ok": true, "ast": {...}}` or `{"id": N, "ok": false, "error": "..."}`.
const acorn = require('acorn')

const OPTIONS = {
  ecmaVersion: 'latest',
  sourceType: 'script',
  // The reference's programs end with `await name(bot);` at the top level.
  allowAwaitOutsideFunction: true,
  allowReturnOutsideFunction: false,
  allowHashBang: false,
  locations: false
}

// BigInt literals have no JSON form; regular expressions would print as {}.
function replacer (key, value) {
  if (typeof value === 'bigint') return `${value}n`
  if (value instanceof RegExp) return String(value)
  return value
}

function parse (code) {
  try {
    const ast = acorn.parse(String(code), OPTIONS)
    return { ok: true, ast }
  } catch (err) {
    // A syntax error, or a tree too deep for the parser's stack (RangeError).
    return { ok: false, error: `${err.name}: ${err.message}` }
  }
}

function answer (result, id) {
  const out = id === undefined ? result : Object.assign({ id }, result)
  try {
    return JSON.stringify(out, replacer)
  } catch (err) {
    const failed = { ok: false, error: `the syntax tree cannot be written: ${err.message}` }
    return JSON.stringify(id === undefined ? failed : Object.assign({ id }, failed))
  }
}

function serve () {
  let buffer = ''
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', (chunk) => {
    buffer += chunk
    let nl
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      if (!line.trim()) continue
      let request
      try {
        request = JSON.parse(line)
      } catch (err) {
        process.stdout.write(answer({ ok: false, error: `bad request: ${err.message}` }) + '\n')
        continue
      }
      process.stdout.write(answer(parse(request.code), request.id) + '\n')
    }
  })
  process.stdin.on('end', () => process.exit(0))
}

function once () {
  const chunks = []
  process.stdin.on('data', (chunk) => chunks.push(chunk))
  process.stdin.on('end', () => {
    process.stdout.write(answer(parse(Buffer.concat(chunks).toString('utf8'))) + '\n')
  })
}

if (process.argv.includes('--serve')) serve()
else once()
