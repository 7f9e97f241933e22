// The cost of the Node boundary (BENCHMARKS.md, targets 3 and 4), against the same
// `prepare` run entirely in Rust in the same process (the addon's internal
// `__benchPrepareRust`: an in-memory query over the same Buffers).
//
// Run with a release build (not part of the tests):
//
//   cd node && npm run build:release && node bench/boundary.mjs [--quick]
//
// 3. One realistic 16 MB snapshot (messages, reasoning, tool calls and 2 KB
//    tool results), default budget, returned by the host as a Buffer (shared
//    with the core, not copied), as a JSON string (converted to UTF-8 by
//    napi: a copy), and as an object (JSON.stringify'd by the wrapper).
//    Also with an unlimited budget, where the prompt itself is megabytes,
//    to show what returning it costs.
// 4. 3 sources × 20 messages: sequential calls; the overhead is the Node
//    median minus the Rust median.
//
// Times are medians of wall time over the runs; every table prints its own
// in-run Rust baseline.

import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const native = require('../index.js')
const { SessionReferenceResolver } = require('../wrapper.js')

const quick = process.argv.includes('--quick')
const TARGET = { id: 't' }
const CONTENT = [{ type: 'text', text: 'go' }]

function text(i, len) {
  const unit = `message ${String(i).padStart(8)} <tag> "quoted" and plain words that fill the line `
  return unit.repeat(Math.ceil(len / unit.length)).slice(0, len)
}

/** The core benchmark's event shapes (core/benches/prepare.rs). */
function event(seq, i, kind, t) {
  switch (kind) {
    case 'checkpoint':
      return { seq, time: seq, type: 'user/message', data: { id: `m${i}`, role: 'user', content: [{ type: 'text', text: t }], source: { kind: 'plugin', plugin: 'compact' } }, surfaceOp: 'append' }
    case 'user':
      return { seq, time: seq, type: 'user/message', data: { id: `m${i}`, role: 'user', content: [{ type: 'text', text: t }], source: { kind: 'user' } }, surfaceOp: 'append' }
    case 'assistant':
      return {
        seq, time: seq, type: 'assistant/message',
        data: {
          turn: i, step: 1,
          message: {
            id: `m${i}`, role: 'assistant',
            content: [
              { type: 'reasoning', text: 'thinking about it '.repeat(20) },
              { type: 'text', text: t },
              { type: 'tool-call', id: `c${i}`, name: 'read', arguments: { path: '/src/lib.rs' } },
            ],
            source: { kind: 'model', provider: 'p', model: 'm' },
          },
        },
        surfaceOp: 'append',
      }
    default:
      return {
        seq, time: seq, type: 'tool/result',
        data: {
          turn: i, step: 1,
          message: { id: `t${i}`, role: 'user', content: [{ type: 'tool-result', toolCallId: `c${i}`, content: [{ type: 'text', text: t }], isError: false }], source: { kind: 'tool', callId: `c${i}` } },
        },
        surfaceOp: 'append',
      }
  }
}

/** A realistic session of about `target` bytes, as JSON text. */
function session(id, target, { messageBytes = 400, toolBytes = 2000 } = {}) {
  const events = []
  let size = 0
  let seq = 0
  for (let i = 0; size < target; i++) {
    const kind = i === 0 ? 'checkpoint' : i % 3 === 1 ? 'user' : 'assistant'
    const e = JSON.stringify(event(seq++, i, kind, text(i, messageBytes)))
    events.push(e)
    size += e.length + 1
    if (kind === 'assistant') {
      const r = JSON.stringify(event(seq++, i, 'tool', text(i, toolBytes)))
      events.push(r)
      size += r.length + 1
    }
  }
  return `{"session":{"id":${JSON.stringify(id)},"createdAt":1700000000000,"cwd":"/work"},"capturedThroughSeq":${seq - 1},"events":[${events.join(',')}]}`
}

/** n messages (user/assistant alternating) of about `bytes` each. */
function small(id, n, bytes) {
  const events = []
  for (let i = 0; i < n; i++) events.push(event(i, i, i % 2 ? 'assistant' : 'user', text(i, bytes)))
  return JSON.stringify({ session: { id, createdAt: 1700000000000, cwd: '/work' }, capturedThroughSeq: n - 1, events })
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

/**
 * Interleaved measurement, so that both sides see the same machine load:
 * `rounds` rounds of `per` Rust runs then `per` Node runs (sequential
 * awaits), after one warm-up round. Returns the medians in ms.
 */
async function interleaved({ snapshots, references, config, node, rounds, per }) {
  const rust = []
  const js = []
  const args = [JSON.stringify(TARGET), JSON.stringify(CONTENT), JSON.stringify(references), per, config]
  for (let round = 0; round <= rounds; round++) {
    const r = native.__benchPrepareRust(snapshots, ...args)
    const n = []
    for (let i = 0; i < per; i++) {
      const t = performance.now()
      await node()
      n.push(performance.now() - t)
    }
    if (round > 0) {
      rust.push(...r.map((ns) => ns / 1e6))
      js.push(...n)
    }
  }
  return { rust: median(rust), node: median(js) }
}

const hostOf = (deliver) => ({ listSessions: () => [], readTitle: () => null, readSurface: deliver })
const f = (ms, digits = 2) => `${ms.toFixed(digits)}ms`.padStart(10)
const rows = []

// ---- target 3: one big snapshot ------------------------------------------
{
  const mb = 16
  const json = session('big', mb << 20)
  const buffer = Buffer.from(json)
  const object = JSON.parse(json)
  const size = buffer.length / 1e6
  const runs = quick ? 5 : 15
  const refs = [{ sessionId: 'big' }]
  console.log(`== target 3: prepare of one ${size.toFixed(1)} MB realistic snapshot (median of ${runs}) ==`)
  console.log(`${'budget'.padEnd(10)}${'host'.padEnd(8)}${'rust'.padStart(10)}${'node'.padStart(10)}${'MB/s'.padStart(8)}${'node/rust thr.'.padStart(16)}${'prompt'.padStart(10)}`)
  for (const [budgetName, config] of [['default', undefined], ['unlimited', { maxReferenceBytes: Number.MAX_SAFE_INTEGER }]]) {
    for (const [host, deliver] of [['Buffer', () => buffer], ['string', () => json], ['object', () => object]]) {
      const resolver = new SessionReferenceResolver(hostOf(deliver), config)
      let prompt = 0
      const node = async () => {
        const p = await resolver.prepare(TARGET, CONTENT, refs)
        prompt = p.additionalContext.content[0].text.length
      }
      const { rust, node: js } = await interleaved({ snapshots: { big: buffer }, references: refs, config, node, rounds: host === 'object' ? Math.ceil(runs / 2) : runs, per: 1 })
      rows.push({ target: 3, budget: budgetName, host, mb: size, rust, node: js, ratio: rust / js })
      console.log(`${budgetName.padEnd(10)}${host.padEnd(8)}${f(rust)}${f(js)}${(size / (js / 1e3)).toFixed(0).padStart(8)}${`${((rust / js) * 100).toFixed(0)}%`.padStart(16)}${`${(prompt / 1e6).toFixed(2)}M`.padStart(10)}`)
    }
  }
}

// ---- target 4: small calls -----------------------------------------------
{
  const ids = ['a', 'b', 'c']
  const texts = Object.fromEntries(ids.map((id) => [id, small(id, 20, 300)]))
  const buffers = Object.fromEntries(ids.map((id) => [id, Buffer.from(texts[id])]))
  const objects = Object.fromEntries(ids.map((id) => [id, JSON.parse(texts[id])]))
  const refs = ids.map((sessionId) => ({ sessionId }))
  const rounds = quick ? 10 : 40
  const per = 50
  console.log(`\n== target 4: prepare of 3 sources × 20 messages (${(buffers.a.length / 1e3).toFixed(1)} KB each), ${rounds} × ${per} sequential calls ==`)
  console.log(`${'host'.padEnd(16)}${'rust'.padStart(10)}${'node'.padStart(10)}${'overhead'.padStart(11)}`)
  const us = (ms) => `${(ms * 1e3).toFixed(1)}µs`.padStart(10)
  for (const [host, deliver] of [
    ['Buffer', (id) => buffers[id]],
    ['async Buffer', async (id) => buffers[id]],
    ['string', (id) => texts[id]],
    ['object', (id) => objects[id]],
  ]) {
    const resolver = new SessionReferenceResolver(hostOf(deliver))
    const node = () => resolver.prepare(TARGET, CONTENT, refs)
    const { rust, node: js } = await interleaved({ snapshots: buffers, references: refs, node, rounds, per })
    rows.push({ target: 4, host, rust, node: js, overheadUs: (js - rust) * 1e3 })
    console.log(`${host.padEnd(16)}${us(rust)}${us(js)}${us(js - rust)}`)
  }
}

// Where the overhead goes: a call with no references (one hop to the
// library's runtime and one back), and 3 empty sources (plus the host reads,
// one more hop each way).
{
  const empty = Buffer.from('{"session":{"id":"e","createdAt":1},"capturedThroughSeq":null,"events":[]}')
  const resolver = new SessionReferenceResolver(hostOf(() => empty))
  const rounds = quick ? 10 : 40
  const per = 50
  const us = (ms) => `${(ms * 1e3).toFixed(1)}µs`.padStart(10)
  for (const [what, refs] of [['no references', []], ['3 empty sources', [{ sessionId: 'a' }, { sessionId: 'b' }, { sessionId: 'c' }]]]) {
    const node = () => resolver.prepare(TARGET, CONTENT, refs)
    const { rust, node: js } = await interleaved({ snapshots: { a: empty, b: empty, c: empty }, references: refs, node, rounds, per })
    rows.push({ target: 4, host: what, rust, node: js, overheadUs: (js - rust) * 1e3 })
    console.log(`${what.padEnd(16)}${us(rust)}${us(js)}${us(js - rust)}`)
  }
}

if (process.argv.includes('--json')) console.log(JSON.stringify(rows))
