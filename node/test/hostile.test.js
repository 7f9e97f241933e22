'use strict'
// Hostile hosts (the guarantees of SECURITY.md) through the Node front: snapshots that are not
// JSON, 100 MB snapshots, 10,000 levels of nesting, a snapshot of another
// session, a listing of 100,000 sessions; and one resolver serving 1,000
// mixed calls in flight with random cancellations. (Hosts that throw,
// reject, return the wrong types or never settle are in host.test.js.)

const test = require('node:test')
const assert = require('node:assert/strict')

const {
  SessionReferenceResolver,
  SessionReferenceError,
  formatSessionReferenceMention,
  stringifyTagSafeJson,
} = require('..')
const { snapshot } = require('./helpers.js')

const TARGET = { id: 'target', cwd: '/work' }
const CONTENT = [{ type: 'text', text: 'see the other sessions' }]
const OPEN = '<referenced-sessions>\n'
const CLOSE = '\n</referenced-sessions>'

/** A host whose surfaces come from `surface(id)` (a value, or a Promise). */
function surfaceHost(surface, { sessions = [], title = () => null } = {}) {
  return { listSessions: () => sessions, readTitle: title, readSurface: surface }
}

async function outcome(promise) {
  try {
    return { value: await promise }
  } catch (error) {
    return { error }
  }
}

async function readFailure(promise, what) {
  const { value, error } = await outcome(promise)
  assert.equal(value, undefined, `${what}: expected a read failure, got a result`)
  assert.ok(error instanceof SessionReferenceError, `${what}: ${error && error.stack}`)
  assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED', `${what}: ${error.message}`)
  return error
}

/** The source objects of a context message's prompt. */
function sourcesOf(context) {
  const text = context.content[0].text
  const start = text.indexOf(OPEN)
  assert.ok(start > 0 && text.endsWith(CLOSE))
  return JSON.parse(text.slice(start + OPEN.length, -CLOSE.length))
}

const GOOD = JSON.stringify(snapshot('s'))

/** GOOD's bytes with `bytes` inserted inside the kept user text. */
function insideText(bytes) {
  const at = GOOD.indexOf('question')
  return Buffer.concat([Buffer.from(GOOD.slice(0, at)), Buffer.from(bytes), Buffer.from(GOOD.slice(at))])
}

test('snapshots that are not JSON text are read failures naming the session', async () => {
  const strings = {
    empty: '',
    whitespace: ' \n\t ',
    'byte order mark': `\uFEFF${GOOD}`,
    'trailing text': `${GOOD}x`,
    'two documents': `${GOOD}${GOOD}`,
    'trailing comma': GOOD.replace(/]}$/, '],}'),
    'single quotes': GOOD.replaceAll('"', "'"),
    comment: `/* hi */${GOOD}`,
    'NaN literal': GOOD.replace('"capturedThroughSeq":1', '"capturedThroughSeq":NaN'),
    'NUL byte': `${GOOD}\u0000`,
    'raw control character in a string': GOOD.replace('question', 'ques\ntion'),
    'escaped lone surrogate in a kept text': GOOD.replace('question', 'question \\ud800'),
    'a JSON string': JSON.stringify(GOOD),
    'a JSON number': '42',
    'a JSON null': 'null',
    'an array': `[${GOOD}]`,
    '5 MB of noise': '{"session":'.padEnd(5 << 20, '{[":,\\'),
    '5 MB unterminated string': `{"session":{"id":"${'x'.repeat(5 << 20)}`,
  }
  const buffers = {
    'empty Buffer': Buffer.alloc(0),
    'NUL bytes': Buffer.alloc(1024),
    'UTF-16 text': Buffer.from(GOOD, 'utf16le'),
    'Latin-1 text': Buffer.from(GOOD.replace('question', 'qué'), 'latin1'),
    'overlong "<"': insideText([0xc0, 0xbc]),
    'UTF-8 of a surrogate': insideText([0xed, 0xa0, 0x80]),
    'a lone continuation byte': insideText([0x80]),
    'a truncated sequence': insideText([0xc3]),
    'a DataView of JSON': new DataView(Buffer.from(GOOD).buffer.slice(0)),
    'a Uint16Array of JSON': new Uint16Array(Buffer.from(GOOD.padEnd(GOOD.length + (GOOD.length % 2), ' ')).buffer.slice(0)),
    'a Uint8ClampedArray of JSON': new Uint8ClampedArray(Buffer.from(GOOD).buffer.slice(0)),
  }
  const cases = { ...strings, ...buffers }
  for (const [what, value] of Object.entries(cases)) {
    for (const wrap of [(v) => v, (v) => Promise.resolve(v)]) {
      const resolver = new SessionReferenceResolver(surfaceHost(() => wrap(value)))
      const error = await readFailure(resolver.prepare(TARGET, CONTENT, [{ sessionId: 'bad "one"' }]), what)
      assert.match(error.message, /"bad \\"one\\""/, what)
    }
    // All or nothing: one hostile source fails the others too.
    const resolver = new SessionReferenceResolver(surfaceHost((id) => (id === 'bad' ? value : GOOD)))
    await readFailure(resolver.prepare(TARGET, CONTENT, [{ sessionId: 'good' }, { sessionId: 'bad' }]), what)
    // And the same bytes as a listing.
    const listing = new SessionReferenceResolver({ ...surfaceHost(() => GOOD), listSessions: () => value })
    await readFailure(listing.candidates(TARGET), `listing: ${what}`)
  }
})

test('objects that JSON cannot represent are read failures', async () => {
  const circular = snapshot('s')
  circular.events[0].data.self = circular
  const throwing = snapshot('s')
  Object.defineProperty(throwing.events[0], 'data', {
    enumerable: true,
    get() {
      throw new Error('getter exploded')
    },
  })
  const cases = {
    circular,
    'a getter that throws': throwing,
    'a BigInt': { ...snapshot('s'), capturedThroughSeq: 1n },
    'toJSON that throws': { toJSON: () => { throw new Error('toJSON exploded') } },
    'toJSON giving a number': { toJSON: () => 7 },
    'an ArrayBuffer': Buffer.from(GOOD).buffer.slice(0),
  }
  for (const [what, value] of Object.entries(cases)) {
    const resolver = new SessionReferenceResolver(surfaceHost(() => value))
    await readFailure(resolver.prepare(TARGET, CONTENT, [{ sessionId: 's' }]), what)
  }
  const error = await readFailure(
    new SessionReferenceResolver(surfaceHost(() => throwing)).prepare(TARGET, CONTENT, [{ sessionId: 's' }]),
    'getter',
  )
  assert.match(error.message, /getter exploded/)
})

test('a Uint8Array view into a larger buffer reads exactly its own bytes', async () => {
  const bytes = Buffer.from(GOOD)
  const backing = Buffer.alloc(bytes.length + 200, '}{ garbage "')
  bytes.copy(backing, 100)
  const view = new Uint8Array(backing.buffer, backing.byteOffset + 100, bytes.length)
  for (const value of [view, backing.subarray(100, 100 + bytes.length)]) {
    const resolver = new SessionReferenceResolver(surfaceHost(() => value))
    const prepared = await resolver.prepare(TARGET, CONTENT, [{ sessionId: 's' }])
    assert.deepEqual(sourcesOf(prepared.additionalContext)[0].conversation, [
      { role: 'user', text: 'question in s' },
      { role: 'assistant', text: 'answer in s' },
    ])
  }
})

/**
 * About 100 MB of snapshot JSON written straight into one Buffer (so that
 * building it peaks at its own size): 50,000 messages of about 1 KB with
 * characters that need escaping, then one 50 MB message.
 */
function hundredMegabytes() {
  const MESSAGES = 50_000
  const GIANT = 50 << 20
  const chunk = '0123456789abcdef<>\\"'.repeat(53)
  const chunkText = '0123456789abcdef<>"'.repeat(53)
  const head = '{"session":{"id":"big","cwd":"/big","createdAt":1},"capturedThroughSeq":50000,"events":['
  const giantHead = '{"seq":50000,"type":"assistant/message","data":{"message":{"content":[{"type":"text","text":"'
  const tail = '"}]}}}]}'
  const message = (i) => `{"seq":${i},"type":"user/message","data":{"content":[{"type":"text","text":"${i} ${chunk}"}],"source":{"kind":"user"}}},`
  let size = head.length + giantHead.length + GIANT + tail.length
  for (let i = 0; i < MESSAGES; i++) size += Buffer.byteLength(message(i))
  const buffer = Buffer.allocUnsafe(size)
  let at = buffer.write(head, 0)
  for (let i = 0; i < MESSAGES; i++) at += buffer.write(message(i), at)
  at += buffer.write(giantHead, at)
  buffer.fill('g', at, at + GIANT)
  at += GIANT
  at += buffer.write(tail, at)
  assert.equal(at, size)
  let dropped = 0
  for (let i = 0; i < MESSAGES; i++) dropped += Buffer.byteLength(`${i} ${chunkText}`)
  return { buffer, MESSAGES, GIANT, dropped }
}

test('a 100 MB Buffer snapshot gives a context within budget, without copying the Buffer', { timeout: 120000 }, async () => {
  const { buffer, MESSAGES, GIANT, dropped } = hundredMegabytes()
  assert.ok(buffer.length > 100 << 20)
  const budget = 65_536
  const resolver = new SessionReferenceResolver(surfaceHost(() => buffer), { maxReferenceBytes: budget })
  const peakBefore = process.resourceUsage().maxRSS * 1024
  const started = performance.now()
  const prepared = await resolver.prepare(TARGET, CONTENT, [{ sessionId: 'big' }])
  const elapsed = performance.now() - started
  // A copy of the input would raise the peak by 100 MB over building it.
  const peakGrowth = process.resourceUsage().maxRSS * 1024 - peakBefore
  if (process.env.DSR_DEBUG_TIMING) {
    console.log(`100 MB prepare: ${elapsed.toFixed(0)} ms, peak RSS +${(peakGrowth / 1e6).toFixed(1)} MB`)
  }
  assert.ok(peakGrowth < buffer.length / 3, `peak RSS grew by ${(peakGrowth / 1e6).toFixed(0)} MB`)
  const context = prepared.additionalContext
  const [source] = sourcesOf(context)
  assert.ok(Buffer.byteLength(stringifyTagSafeJson(source)) <= budget)
  assert.equal(source.sessionId, 'big')
  assert.equal(source.conversation.length, 1, 'everything but the newest message is dropped')
  const { text } = source.conversation[0]
  const marker = text.lastIndexOf('\n[… omitted ')
  assert.ok(marker > 0)
  assert.match(text.slice(0, marker), /^g+$/)
  const omitted = Number(/omitted (\d+) UTF-8 bytes …]$/.exec(text)[1])
  assert.equal(omitted, GIANT - marker, 'the omission count is exact')
  const meta = context.source.references[0]
  assert.equal(meta.originalMessages, MESSAGES + 1)
  assert.equal(meta.omittedMessages, MESSAGES)
  assert.equal(meta.retainedMessages, 1)
  assert.equal(meta.omittedBytes, dropped + omitted)
  // Generous: debug builds on a loaded 2-core machine; catches quadratic work.
  assert.ok(elapsed < 60000, `${elapsed.toFixed(0)} ms`)
})

/** `[[[…leaf…]]]` (or `{"a":{"a":…}}`) with `depth` levels, built without recursion. */
function nestedValue(depth, leaf, object = false) {
  let v = leaf
  for (let i = 0; i < depth; i++) v = object ? { a: v } : [v]
  return v
}

test('10,000 levels of nesting, as text, bytes or objects, give clean results', async () => {
  const DEPTH = 10_000
  const deep = '['.repeat(DEPTH) + ']'.repeat(DEPTH)
  const deepObject = '{"a":'.repeat(DEPTH) + '1' + '}'.repeat(DEPTH)
  const kept = '{"type":"user/message","data":{"content":[{"type":"text","text":"kept"}],"source":{"kind":"user"}}}'
  const doc = (events) => `{"session":{"id":"s"},"capturedThroughSeq":1,"events":[${events}]}`
  // Where the nesting is data the projection skips, the snapshot is fine;
  // anywhere the snapshot's shape is read, it is a read failure.
  const texts = {
    whole: [deep, null],
    'whole object': [deepObject, null],
    session: [`{"session":${deep},"capturedThroughSeq":1,"events":[]}`, null],
    events: [`{"session":{"id":"s"},"capturedThroughSeq":1,"events":${deep}}`, null],
    text: [doc(`{"type":"user/message","data":{"content":[{"type":"text","text":${deep}}],"source":{"kind":"user"}}}`), []],
    source: [doc(`{"type":"user/message","data":{"content":[],"source":${deep}}}`), null],
    // An object without a `kind` is just not a user message: excluded.
    'source object': [doc(`{"type":"user/message","data":{"content":[{"type":"text","text":"x"}],"source":${deepObject}}},${kept}`), ['kept']],
    'tool-call arguments': [
      doc(`{"type":"user/message","data":{"content":[{"type":"tool-call","arguments":${deepObject}}],"source":{"kind":"user"}}},${kept}`),
      ['kept'],
    ],
    'a skipped event': [doc(`{"type":"tool/result","data":${deep}},${kept}`), ['kept']],
  }
  const check = async (what, value, want) => {
    const resolver = new SessionReferenceResolver(surfaceHost(() => value))
    const { value: prepared, error } = await outcome(resolver.prepare(TARGET, CONTENT, [{ sessionId: 's' }]))
    if (want === null) {
      assert.ok(error instanceof SessionReferenceError, `${what}: ${error}`)
      assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED', what)
    } else {
      assert.equal(error, undefined, `${what}: ${error && error.message}`)
      const texts = sourcesOf(prepared.additionalContext)[0].conversation.map((m) => m.text)
      assert.deepEqual(texts, want, what)
    }
  }
  for (const [what, [text, want]] of Object.entries(texts)) {
    await check(`string: ${what}`, text, want)
    await check(`Buffer: ${what}`, Buffer.from(text), want)
  }
  // As objects, the host's value goes through JSON.stringify, which gives
  // up at this depth (a RangeError): a read failure, never a crash.
  const objects = {
    whole: nestedValue(DEPTH, null),
    text: JSON.parse(doc('{"type":"user/message","data":{"content":[{"type":"text","text":null}],"source":{"kind":"user"}}}')),
    arguments: JSON.parse(doc(`{"type":"user/message","data":{"content":[{"type":"tool-call","arguments":null}],"source":{"kind":"user"}}},${kept}`)),
  }
  objects.text.events[0].data.content[0].text = nestedValue(DEPTH, 'leaf', true)
  objects.arguments.events[0].data.content[0].arguments = nestedValue(DEPTH, 'leaf')
  for (const [what, value] of Object.entries(objects)) await check(`object: ${what}`, value, null)
  // A listing nested that deep is a read failure of the listing.
  for (const value of [deep, Buffer.from(deep), nestedValue(DEPTH, [])]) {
    const resolver = new SessionReferenceResolver({ ...surfaceHost(() => GOOD), listSessions: () => value })
    await readFailure(resolver.candidates(TARGET, 'x'), 'deep listing')
  }
})

test('a snapshot of another session shows its own id in the prompt, the asked id in the metadata', async () => {
  for (const style of [(v) => v, (v) => JSON.stringify(v), (v) => Buffer.from(JSON.stringify(v))]) {
    const resolver = new SessionReferenceResolver(surfaceHost(() => style(snapshot('answered', { cwd: '/elsewhere' }))))
    const prepared = await resolver.prepare(TARGET, CONTENT, [{ sessionId: 'asked', label: 'L' }])
    const [source] = sourcesOf(prepared.additionalContext)
    assert.equal(source.sessionId, 'answered')
    assert.equal(source.cwd, '/elsewhere')
    assert.equal(source.label, 'L')
    assert.equal(prepared.additionalContext.source.references[0].sessionId, 'asked')
  }
})

test('a listing of 100,000 sessions gives exactly the ranked, filtered candidates', { timeout: 120000 }, async () => {
  const N = 100_000
  const cwdOf = (i) => (i % 5 === 0 ? '/work' : i % 5 <= 2 ? undefined : `/p${i % 11}`)
  const titleOf = (i) => (i % 7 === 0 ? { fails: true } : i % 7 <= 2 ? null : `Topic ${i % 1000} ÄÖ`)
  const sessions = []
  for (let i = 0; i < N; i++) {
    const header = { id: `s${i}`, createdAt: i }
    if (cwdOf(i) !== undefined) header.cwd = cwdOf(i)
    sessions.push(header)
  }
  sessions.splice(N / 2, 0, { id: 'target', createdAt: 0, cwd: '/work' })
  const rank = (i) => (cwdOf(i) === '/work' ? 0 : cwdOf(i) === undefined ? 1 : 2)
  const label = (i) => {
    const t = titleOf(i)
    return typeof t === 'string' ? t : `s${i}`
  }
  const ranked = (keep) => {
    const all = []
    for (let i = 0; i < N; i++) if (keep(i)) all.push(i)
    return all.sort((a, b) => rank(a) - rank(b) || a - b)
  }
  const listings = { objects: () => sessions, text: () => JSON.stringify(sessions), Buffer: () => Buffer.from(JSON.stringify(sessions)) }
  for (const [what, listSessions] of Object.entries(listings)) {
    // 100,000 title reads are each a call into JavaScript: once is enough.
    const withQuery = what === 'objects'
    let titlesRead = 0
    let sawTarget = false
    const host = {
      listSessions,
      readTitle: async (id) => {
        titlesRead++
        if (id === 'target') sawTarget = true
        const t = titleOf(Number(id.slice(1)))
        if (t !== null && typeof t === 'object') throw new Error('title store down')
        return t
      },
      readSurface: () => GOOD,
    }
    const resolver = new SessionReferenceResolver(host)
    // Empty query: the first 50 after ranking; only their titles are read.
    let started = performance.now()
    const got = await resolver.candidates(TARGET)
    const emptyMs = performance.now() - started
    const want = ranked(() => true).slice(0, 50)
    assert.deepEqual(
      got,
      want.map((i) => {
        const c = { sessionId: `s${i}`, label: label(i) }
        if (cwdOf(i) !== undefined) c.cwd = cwdOf(i)
        c.createdAt = i
        c.mention = formatSessionReferenceMention({ sessionId: `s${i}`, label: label(i) })
        return c
      }),
      what,
    )
    assert.equal(titlesRead, 50)
    if (process.env.DSR_DEBUG_TIMING) console.log(`100,000 sessions (${what}): empty query ${emptyMs.toFixed(0)} ms`)
    // Generous (debug build, shared 2 cores): about 1 s here.
    assert.ok(emptyMs < 15000, `empty query: ${emptyMs.toFixed(0)} ms`)
    if (!withQuery) continue
    // A query: every title is read once, matches by id, cwd or title
    // (Unicode lower-casing), ranked and cut at the limit.
    titlesRead = 0
    const query = 'topic 42 äö'
    started = performance.now()
    const found = await resolver.listCandidates(TARGET, query, 1000)
    const queryMs = performance.now() - started
    const wantFound = ranked((i) => label(i).toLowerCase().includes(query)).slice(0, 1000)
    assert.ok(wantFound.length > 0)
    assert.deepEqual(
      found.map((c) => [c.sessionId, c.label]),
      wantFound.map((i) => [`s${i}`, label(i)]),
    )
    assert.equal(titlesRead, N, 'every listed session but the target')
    assert.equal(sawTarget, false, 'the target is never a candidate')
    if (process.env.DSR_DEBUG_TIMING) console.log(`100,000 sessions (${what}): query ${queryMs.toFixed(0)} ms`)
    // Generous (debug build, shared 2 cores): about 9 s here.
    assert.ok(queryMs < 45000, `query: ${queryMs.toFixed(0)} ms`)
  }
})

/** A small seeded PRNG (mulberry32), so a failing run can be replayed. */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A result with the fresh context-message ids replaced (they are random UUIDs). */
function withoutContextIds(value) {
  const scrub = (m) => (m && m.source && m.source.kind === 'session-reference' ? { ...m, id: '<id>' } : m)
  if (Array.isArray(value)) return value.map(scrub)
  if (value && value.additionalContext) return { ...value, additionalContext: scrub(value.additionalContext) }
  return value
}

test('one resolver, 1,000 mixed calls in flight with random cancellations: all settle, results as sequential', { timeout: 90000 }, async () => {
  const seed = Number(process.env.DSR_SEED || Date.now() % 1e9)
  const ids = Array.from({ length: 12 }, (_, i) => `s${i}`)
  const sessions = ids.map((id, i) => ({ id, createdAt: i, ...(i % 3 ? { cwd: i % 3 === 1 ? '/work' : '/else' } : {}) }))
  // Sources of different sizes, some cut down by the 2 KB budget.
  const surfaces = Object.fromEntries(
    ids.map((id, i) => {
      const s = snapshot(id, { user: `question ${i} `.repeat(1 + i * 40), assistant: `answer <${i}> `.repeat(1 + i * 30) })
      return [id, JSON.stringify(s)]
    }),
  )
  // The host answers in every style, after random delays; s11 always fails.
  const delays = random(seed ^ 0x5eed)
  const later = (make) => {
    const r = delays()
    if (r < 0.3) return make()
    if (r < 0.6) return Promise.resolve().then(make)
    return new Promise((resolve, reject) => setTimeout(() => { try { resolve(make()) } catch (e) { reject(e) } }, Math.floor(r * 4)))
  }
  const host = {
    listSessions: () => later(() => sessions),
    readTitle: (id) => later(() => (Number(id.slice(1)) % 4 === 0 ? null : `Title ${id}`)),
    readSurface: (id) =>
      later(() => {
        if (id === 's11' || !(id in surfaces)) throw new Error(`no session ${id}`)
        return Number(id.slice(1)) % 2 ? Buffer.from(surfaces[id]) : surfaces[id]
      }),
  }
  const resolver = new SessionReferenceResolver(host, { maxReferenceBytes: 2048, candidateLimit: 5 })

  // 1,000 calls, drawn from the seed.
  const draw = random(seed)
  const pick = (list) => list[Math.floor(draw() * list.length)]
  const refsOf = () => Array.from({ length: 1 + Math.floor(draw() * 3) }, () => ({ sessionId: pick(ids) }))
  const calls = Array.from({ length: 1000 }, (_, i) => {
    const kind = pick(['prepare', 'prepareMessages', 'candidates', 'listCandidates'])
    if (kind === 'prepare') {
      const refs = draw() < 0.05 ? [{ sessionId: 'target' }] : refsOf()
      return { kind, run: (signal) => resolver.prepare(TARGET, [{ type: 'text', text: `call ${i}` }], refs, { signal }) }
    }
    if (kind === 'prepareMessages') {
      const messages = Array.from({ length: 1 + Math.floor(draw() * 3) }, (_, j) => ({
        id: `m${j}`,
        role: 'user',
        source: { kind: 'user' },
        content: [{ type: 'text', text: `msg ${j} ${refsOf().map((r) => formatSessionReferenceMention(r)).join(' ')}` }],
      }))
      return { kind, run: (signal) => resolver.prepareMessages(TARGET, messages, { signal }) }
    }
    const query = pick(['', '', 'title', 's1', '/work', 'nothing'])
    if (kind === 'candidates') return { kind, run: (signal) => resolver.candidates(TARGET, query, { signal }) }
    const limit = 1 + Math.floor(draw() * 12)
    return { kind, run: (signal) => resolver.listCandidates(TARGET, query, limit, { signal }) }
  })
  const settle = async (promise) => {
    const { value, error } = await outcome(promise)
    if (error === undefined) return { value: withoutContextIds(value) }
    assert.ok(error instanceof SessionReferenceError, error && error.stack)
    return { code: error.code }
  }

  // The single-flight results.
  const expected = []
  for (const call of calls) expected.push(await settle(call.run(undefined)))
  const codes = new Set(expected.map((e) => e.code))
  assert.ok(codes.has('SESSION_REFERENCE_READ_FAILED') && codes.has('SESSION_REFERENCE_SELF_REFERENCE'), [...codes].join())

  // Batches of 100 in flight: 10% aborted before the call, 30% after a
  // random delay; all under a watchdog.
  const cancelling = random(seed ^ 0xca11)
  let cancelled = 0
  const run = async () => {
    for (let start = 0; start < calls.length; start += 100) {
      const batch = calls.slice(start, start + 100).map(async (call, k) => {
        const i = start + k
        const r = cancelling()
        const controller = new AbortController()
        if (r < 0.1) controller.abort()
        else if (r < 0.4) setTimeout(() => controller.abort(), Math.floor(cancelling() * 6))
        const got = await settle(call.run(controller.signal))
        if (got.code === 'SESSION_REFERENCE_CANCELLED' && expected[i].code !== 'SESSION_REFERENCE_CANCELLED') {
          assert.ok(r < 0.4, `call ${i} (${call.kind}) was cancelled without an abort`)
          cancelled++
        } else {
          assert.deepEqual(got, expected[i], `call ${i} (${call.kind}), seed ${seed}`)
        }
      })
      await Promise.all(batch)
    }
  }
  let watchdog
  const timeout = new Promise((_, reject) => {
    watchdog = setTimeout(() => reject(new Error(`calls still pending after 60 s (seed ${seed})`)), 60000)
  })
  try {
    await Promise.race([run(), timeout])
  } finally {
    clearTimeout(watchdog)
  }
  assert.ok(cancelled >= 50, `only ${cancelled} calls were cancelled (seed ${seed})`)
})
