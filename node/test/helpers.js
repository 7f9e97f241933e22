'use strict'
// Shared helpers of the node:test suites: where the vectors are, and hosts
// of every flavour (synchronous, asynchronous, JSON text, Buffer).

const path = require('node:path')
const fs = require('node:fs')

const repoRoot = path.resolve(__dirname, '..', '..')

/** The conformance directory: `DSR_CONFORMANCE_DIR`, else the project's `tests/conformance`. */
const conformanceDir = process.env.DSR_CONFORMANCE_DIR
  ? path.resolve(process.env.DSR_CONFORMANCE_DIR)
  : path.join(repoRoot, 'tests', 'conformance')

/** Reads one vector file of the conformance set. */
function vectors(file) {
  return JSON.parse(fs.readFileSync(path.join(conformanceDir, file), 'utf8'))
}

/** How a host hands back a value: the ways the Node API accepts. */
const STYLES = ['sync-object', 'async-object', 'sync-json', 'async-json', 'buffer', 'async-buffer']

function deliver(style, value) {
  switch (style) {
    case 'sync-object':
      return value
    case 'async-object':
      return Promise.resolve(value)
    case 'sync-json':
      return JSON.stringify(value)
    case 'async-json':
      return new Promise((resolve) => setImmediate(() => resolve(JSON.stringify(value))))
    case 'buffer':
      return Buffer.from(JSON.stringify(value))
    case 'async-buffer':
      return Promise.resolve(new TextEncoder().encode(JSON.stringify(value)))
    default:
      throw new Error(`unknown style ${style}`)
  }
}

/**
 * An in-memory host: `sessions` (headers in listing order), `titles`
 * (id → string, or {rejected: reason}), `surfaces` (id → snapshot); any
 * other id fails its read. `style` picks how values are returned.
 */
function memoryHost({ sessions = [], titles = {}, surfaces = {}, style = 'sync-object' } = {}) {
  const calls = { listSessions: 0, readTitle: 0, readSurface: 0 }
  const async = style.startsWith('async')
  const fail = (message) => {
    if (async) return Promise.reject(new Error(message))
    throw new Error(message)
  }
  return {
    calls,
    listSessions() {
      calls.listSessions++
      return deliver(style, sessions)
    },
    readTitle(sessionId) {
      calls.readTitle++
      const title = Object.prototype.hasOwnProperty.call(titles, sessionId) ? titles[sessionId] : undefined
      if (title !== null && typeof title === 'object') return fail(title.rejected)
      return async ? Promise.resolve(title) : title
    },
    readSurface(sessionId) {
      calls.readSurface++
      if (!Object.prototype.hasOwnProperty.call(surfaces, sessionId)) return fail(`no session ${sessionId}`)
      return deliver(style, surfaces[sessionId])
    },
  }
}

/** A small snapshot with one user and one assistant message. */
function snapshot(id, { cwd, user = `question in ${id}`, assistant = `answer in ${id}` } = {}) {
  const session = { id, createdAt: 1700000000000 }
  if (cwd !== undefined) session.cwd = cwd
  return {
    session,
    capturedThroughSeq: 1,
    events: [
      {
        seq: 0,
        type: 'user/message',
        data: { role: 'user', content: [{ type: 'text', text: user }], source: { kind: 'user' } },
      },
      {
        seq: 1,
        type: 'assistant/message',
        data: { message: { role: 'assistant', content: [{ type: 'text', text: assistant }] } },
      },
    ],
  }
}

module.exports = { repoRoot, conformanceDir, vectors, STYLES, deliver, memoryHost, snapshot }
