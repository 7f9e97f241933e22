'use strict'
// How the Node front treats its host: synchronous and asynchronous hosts,
// hosts that throw, reject, return the wrong types or never settle,
// cancellation through AbortSignal, the event loop staying free, and many
// calls in flight against a host that itself needs the libuv pool.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const { SessionReferenceResolver, SessionReferenceError, formatSessionReferenceMention } = require('..')
const { STYLES, memoryHost, snapshot } = require('./helpers.js')

const TARGET = { id: 'target', cwd: '/work' }
const CONTENT = [{ type: 'text', text: 'see the other sessions' }]

/** A host whose every method returns what `make` returns for it. */
function hostReturning(make) {
  return {
    listSessions: () => make('listSessions'),
    readTitle: (id) => make('readTitle', id),
    readSurface: (id) => make('readSurface', id),
  }
}

async function rejection(promise) {
  try {
    await promise
  } catch (error) {
    return error
  }
  assert.fail('expected the promise to reject')
}

test('every host style gives the same prompt', async () => {
  const surfaces = { a: snapshot('a', { cwd: '/work' }), b: snapshot('b') }
  const refs = [{ sessionId: 'a' }, { sessionId: 'b', label: 'Bee' }]
  const prompts = new Set()
  for (const style of STYLES) {
    const resolver = new SessionReferenceResolver(memoryHost({ surfaces, style }))
    const prepared = await resolver.prepare(TARGET, CONTENT, refs)
    prompts.add(prepared.additionalContext.content[0].text)
  }
  assert.equal(prompts.size, 1)
  const [prompt] = prompts
  assert.ok(prompt.includes('"label":"Bee"'))
})

test('a thenable that is not a Promise is awaited too', async () => {
  const host = hostReturning((op, id) => ({
    then(resolve) {
      setTimeout(() => resolve(op === 'readSurface' ? snapshot(id) : op === 'readTitle' ? 'A title' : []), 1)
    },
  }))
  const prepared = await new SessionReferenceResolver(host).prepare(TARGET, CONTENT, [{ sessionId: 'x' }])
  assert.ok(prepared.additionalContext.content[0].text.includes('question in x'))
})

test('the result is a copy: the caller content is neither mutated nor aliased', async () => {
  const content = [{ type: 'text', text: 'hello' }]
  const resolver = new SessionReferenceResolver(memoryHost({ surfaces: { a: snapshot('a') } }))
  for (const refs of [[], [{ sessionId: 'a' }]]) {
    const prepared = await resolver.prepare(TARGET, content, refs)
    assert.deepEqual(prepared.content, content)
    assert.notEqual(prepared.content, content)
    prepared.content[0].text = 'changed'
    assert.equal(content[0].text, 'hello')
  }
})

test('a host that throws synchronously is a read failure carrying its message', async () => {
  const host = hostReturning(() => {
    throw new Error('disk on fire')
  })
  const error = await rejection(new SessionReferenceResolver(host).prepare(TARGET, CONTENT, [{ sessionId: 's' }]))
  assert.ok(error instanceof SessionReferenceError)
  assert.ok(error instanceof Error)
  assert.equal(error.name, 'SessionReferenceError')
  assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED')
  assert.match(error.message, /disk on fire/)
})

test('a host that rejects is a read failure carrying its message', async () => {
  for (const reason of [new Error('network down'), new TypeError('network down'), 'network down']) {
    const host = hostReturning(() => Promise.reject(reason))
    const error = await rejection(new SessionReferenceResolver(host).prepare(TARGET, CONTENT, [{ sessionId: 's' }]))
    assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED')
    assert.match(error.message, /network down/)
  }
  // Even a rejection without a message is a read failure, not a crash.
  for (const reason of [undefined, null, 42, { what: 'no' }]) {
    const host = hostReturning(() => Promise.reject(reason))
    const error = await rejection(new SessionReferenceResolver(host).prepare(TARGET, CONTENT, [{ sessionId: 's' }]))
    assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED')
  }
})

test('a snapshot of the wrong type is a read failure', async () => {
  const wrong = [
    42,
    true,
    undefined,
    null,
    Symbol('x'),
    10n,
    () => snapshot('s'),
    [],
    'not json',
    '{"session": 1}',
    Buffer.from('{"truncated": '),
    Buffer.from([0xff, 0xfe]),
    new Float64Array(4),
    { session: { id: 's', createdAt: 1 }, capturedThroughSeq: 0, events: 'nope' },
  ]
  for (const value of wrong) {
    for (const wrap of [(v) => v, (v) => Promise.resolve(v)]) {
      const host = hostReturning(() => wrap(value))
      const error = await rejection(new SessionReferenceResolver(host).prepare(TARGET, CONTENT, [{ sessionId: 's' }]))
      assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED', `for ${typeof value} ${String(value)}`)
    }
  }
})

test('a listing of the wrong type is a read failure; a failing or wrong title falls back to the id', async () => {
  const listings = [() => 42, () => 'nope', () => [{ id: 1 }], () => [{ id: 'a' }], () => Promise.reject(new Error('no list'))]
  for (const listing of listings) {
    const host = { ...memoryHost(), listSessions: listing }
    const error = await rejection(new SessionReferenceResolver(host).candidates(TARGET))
    assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED')
  }
  const titles = { a: 42, b: { rejected: 'gone' }, c: 'Real title', d: null }
  const sessions = ['a', 'b', 'c', 'd'].map((id) => ({ id, createdAt: 1, cwd: '/work' }))
  const host = { ...memoryHost({ sessions, titles }) }
  const list = await new SessionReferenceResolver(host).candidates(TARGET)
  assert.deepEqual(
    list.map((c) => c.label),
    ['a', 'b', 'Real title', 'd'],
  )
  assert.equal(list[2].mention, formatSessionReferenceMention({ sessionId: 'c', label: 'Real title' }))
})

test('a read that never settles is cancelled promptly by an AbortSignal', async () => {
  const never = () => new Promise(() => {})
  const host = hostReturning(never)
  const resolver = new SessionReferenceResolver(host)
  const calls = [
    (signal) => resolver.prepare(TARGET, CONTENT, [{ sessionId: 'a' }, { sessionId: 'b' }], { signal }),
    (signal) => resolver.prepareMessages(TARGET, [userMessage('see @[a](dsh-session:ImEi)')], { signal }),
    (signal) => resolver.candidates(TARGET, '', { signal }),
    (signal) => resolver.candidates(TARGET, 'query', { signal }),
    (signal) => resolver.listCandidates(TARGET, '', 5, { signal }),
  ]
  for (const call of calls) {
    const controller = new AbortController()
    const started = performance.now()
    setTimeout(() => controller.abort(new Error('user pressed stop')), 30)
    const error = await rejection(call(controller.signal))
    const elapsed = performance.now() - started
    assert.ok(error instanceof SessionReferenceError)
    assert.equal(error.code, 'SESSION_REFERENCE_CANCELLED')
    assert.equal(error.cause.message, 'user pressed stop')
    assert.ok(elapsed < 2000, `cancellation took ${elapsed} ms`)
  }
})

test('titles that never settle are cancelled too', async () => {
  const sessions = [{ id: 'a', createdAt: 1 }]
  const host = { ...memoryHost({ sessions }), readTitle: () => new Promise(() => {}) }
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 20)
  const error = await rejection(new SessionReferenceResolver(host).candidates(TARGET, '', { signal: controller.signal }))
  assert.equal(error.code, 'SESSION_REFERENCE_CANCELLED')
})

test('an already aborted signal cancels before any read', async () => {
  const host = memoryHost({ surfaces: { a: snapshot('a') }, sessions: [{ id: 'a', createdAt: 1 }] })
  const resolver = new SessionReferenceResolver(host)
  const signal = AbortSignal.abort()
  for (const call of [
    () => resolver.prepare(TARGET, CONTENT, [{ sessionId: 'a' }], { signal }),
    () => resolver.prepareMessages(TARGET, [userMessage('@[a](dsh-session:ImEi)')], { signal }),
    () => resolver.candidates(TARGET, '', { signal }),
    () => resolver.listCandidates(TARGET, 'a', 3, { signal }),
  ]) {
    const error = await rejection(call())
    assert.equal(error.code, 'SESSION_REFERENCE_CANCELLED')
    assert.equal(error.cause, signal.reason)
  }
  assert.deepEqual(host.calls, { listSessions: 0, readTitle: 0, readSurface: 0 })
  // Validation comes first (docs/contract.md §6): with no references there is nothing to cancel.
  assert.deepEqual(await resolver.prepare(TARGET, CONTENT, [], { signal }), { content: CONTENT })
  assert.equal((await rejection(resolver.prepare(TARGET, CONTENT, [{ sessionId: 'target' }], { signal }))).code,
    'SESSION_REFERENCE_SELF_REFERENCE')
})

test('cancellation wins over a read error that arrives after it', async () => {
  const controller = new AbortController()
  const host = hostReturning(
    () =>
      new Promise((_, reject) => {
        controller.abort()
        setTimeout(() => reject(new Error('late failure')), 5)
      }),
  )
  const error = await rejection(
    new SessionReferenceResolver(host).prepare(TARGET, CONTENT, [{ sessionId: 'a' }], { signal: controller.signal }),
  )
  assert.equal(error.code, 'SESSION_REFERENCE_CANCELLED')
})

test('a signal that never aborts leaves no listener behind', async () => {
  const controller = new AbortController()
  let listeners = 0
  const signal = controller.signal
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  signal.addEventListener = (...args) => {
    listeners++
    add(...args)
  }
  signal.removeEventListener = (...args) => {
    listeners--
    remove(...args)
  }
  const resolver = new SessionReferenceResolver(memoryHost({ surfaces: { a: snapshot('a') } }))
  await resolver.prepare(TARGET, CONTENT, [{ sessionId: 'a' }], { signal })
  await rejection(resolver.prepare(TARGET, CONTENT, [{ sessionId: 'missing' }], { signal }))
  assert.equal(listeners, 0)
})

function userMessage(text, id = 'm1') {
  return { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }
}

test('prepareMessages rewrites mentions and inserts the context message after its message', async () => {
  const resolver = new SessionReferenceResolver(memoryHost({ surfaces: { a: snapshot('a') }, style: 'async-json' }))
  const messages = [
    { id: 'sys', role: 'system', content: [{ type: 'text', text: 'dsh-session:ImEi stays' }], source: { kind: 'system' } },
    userMessage(`compare ${formatSessionReferenceMention({ sessionId: 'a', label: 'A' })} please`),
    userMessage('no mention here', 'm2'),
  ]
  const out = await resolver.prepareMessages(TARGET, messages)
  assert.equal(out.length, 4)
  assert.deepEqual(out[0], messages[0])
  assert.equal(out[1].id, 'm1')
  assert.equal(out[1].content[0].text, 'compare @A please')
  assert.equal(out[2].role, 'user')
  assert.equal(out[2].source.kind, 'session-reference')
  assert.equal(out[2].source.references[0].label, 'A')
  assert.deepEqual(out[3], messages[2])
  const bad = await rejection(resolver.prepareMessages(TARGET, [userMessage('@[x](dsh-session:!!)')]))
  assert.equal(bad.code, 'SESSION_REFERENCE_INVALID_REFERENCE')
})

test('misuse of the API is a TypeError', async () => {
  const resolver = new SessionReferenceResolver(memoryHost())
  const misuse = { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }
  await assert.rejects(resolver.prepare(null, CONTENT, []), misuse)
  await assert.rejects(resolver.prepare({ id: 5 }, CONTENT, []), misuse)
  await assert.rejects(resolver.prepare({ id: 'x', cwd: 5 }, CONTENT, []), misuse)
  await assert.rejects(resolver.prepare(TARGET, undefined, []), misuse)
  await assert.rejects(resolver.prepare(TARGET, CONTENT, 'a'), misuse)
  await assert.rejects(resolver.prepareMessages(TARGET, {}), misuse)
  await assert.rejects(resolver.candidates(TARGET, 5), misuse)
  await assert.rejects(resolver.prepare(TARGET, CONTENT, [], { signal: 'stop' }), misuse)
  assert.throws(() => new SessionReferenceResolver(null), misuse)
  assert.throws(() => new SessionReferenceResolver({ listSessions() {}, readTitle() {} }), misuse)
})

test('an invalid config or limit is a SessionReferenceError', async () => {
  for (const config of [{ maxReferences: 4 }, { candidateLimit: NaN }, { maxReferenceBytes: '5' }, 7]) {
    assert.throws(() => new SessionReferenceResolver(memoryHost(), config), { code: 'SESSION_REFERENCE_INVALID_CONFIG' })
  }
  const resolver = new SessionReferenceResolver(memoryHost(), { maxReferences: null, candidateLimit: undefined })
  for (const limit of [0, -1, 1.5, NaN, Infinity, 2 ** 53, null, '3']) {
    await assert.rejects(resolver.listCandidates(TARGET, '', limit), { code: 'SESSION_REFERENCE_INVALID_REFERENCE' })
  }
  assert.deepEqual(await resolver.listCandidates(TARGET, '', 2 ** 53 - 1), [])
})

test('timers keep firing while a long prepare runs (the event loop is free)', async () => {
  // Two sources of about 12 MB each, cut down to 64 KiB: seconds of native work.
  const big = (id) => {
    const events = []
    for (let i = 0; i < 12000; i++) {
      events.push({
        seq: i,
        type: i % 2 ? 'assistant/message' : 'user/message',
        data:
          i % 2
            ? { message: { role: 'assistant', content: [{ type: 'text', text: `${i} ${'é<'.repeat(500)}` }] } }
            : { role: 'user', content: [{ type: 'text', text: `${i} ${'x'.repeat(1000)}` }], source: { kind: 'user' } },
      })
    }
    return Buffer.from(JSON.stringify({ session: { id, createdAt: 1 }, capturedThroughSeq: 11999, events }))
  }
  const buffers = { a: big('a'), b: big('b') }
  const resolver = new SessionReferenceResolver(hostReturning((op, id) => buffers[id]))
  let ticks = 0
  let last = performance.now()
  let maxGap = 0
  const timer = setInterval(() => {
    const now = performance.now()
    maxGap = Math.max(maxGap, now - last)
    last = now
    ticks++
  }, 2)
  const started = performance.now()
  try {
    const prepared = await resolver.prepare(TARGET, CONTENT, [{ sessionId: 'a' }, { sessionId: 'b' }])
    assert.equal(prepared.additionalContext.source.references[0].truncated, true)
  } finally {
    clearInterval(timer)
  }
  const elapsed = performance.now() - started
  assert.ok(ticks >= Math.min(10, elapsed / 20), `${ticks} ticks in ${elapsed.toFixed(0)} ms`)
  if (process.env.DSR_DEBUG_TIMING) console.log(`prepare ${elapsed.toFixed(0)} ms, ${ticks} ticks, max gap ${maxGap.toFixed(1)} ms`)
  assert.ok(maxGap < 250, `the event loop stalled for ${maxGap.toFixed(0)} ms during ${elapsed.toFixed(0)} ms`)
})

test('small preparations from plain host values settle on the JavaScript thread; the rest go to the library threads', async () => {
  // The native layer under the wrapper: a plain result when the work
  // finished where it was called, a Promise when it runs elsewhere.
  const { NativeResolver } = require('../index.js')
  const json = (id, text) => JSON.stringify(snapshot(id, { user: text }))
  const small = Buffer.from(json('s', 'hello <b>'))
  const big = Buffer.from(json('b', 'x'.repeat(300 << 10)))
  const native = (read) => new NativeResolver(() => '[]', () => null, read, null)
  const call = (resolver, id) =>
    resolver.prepare(JSON.stringify({ target: TARGET, content: CONTENT, references: [{ sessionId: id }] }))
  const isPromise = (v) => v !== null && typeof v === 'object' && typeof v.then === 'function'

  const plain = call(native(() => small), 's')
  assert.ok(!isPromise(plain), 'a small plain Buffer is prepared at once')
  const viaPromise = call(native(() => Promise.resolve(small)), 's')
  assert.ok(isPromise(viaPromise), 'a host Promise is awaited on the library threads')
  const settled = await viaPromise
  assert.equal(typeof plain.json, 'string')
  // The same result both ways, up to the fresh context message id.
  const withoutId = (parts) => parts.contexts.map(({ prompt, source }) => ({ prompt, source }))
  assert.equal(plain.json, settled.json)
  assert.equal(plain.contexts.length, 1)
  assert.deepEqual(withoutId(plain), withoutId(settled))

  assert.ok(isPromise(call(native(() => big), 'b')), 'more than 256 KiB is prepared on the library threads')
  assert.ok(!isPromise(call(native(() => small), 'target')), 'a failure found before any read settles at once')

  // Through the wrapper both are Promises, as always.
  const resolver = new SessionReferenceResolver(hostReturning((op, id) => (op === 'readSurface' ? small : '[]')))
  const p = resolver.prepare(TARGET, CONTENT, [{ sessionId: 's' }])
  assert.ok(p instanceof Promise)
  assert.equal((await p).additionalContext.content[0].text, plain.contexts[0].prompt)
})

test('Promise hosts: plain and Promise values mixed, big snapshots, and a failure while another read hangs', async () => {
  const small = (id) => Buffer.from(JSON.stringify(snapshot(id, { user: `<q> in ${id}` })))
  const big = (id) => Buffer.from(JSON.stringify(snapshot(id, { user: 'x'.repeat(300 << 10) })))
  const later = (value, ms = 1) => new Promise((resolve) => setTimeout(() => resolve(value), ms))
  const refs = [{ sessionId: 'a' }, { sessionId: 'b' }]
  const text = (prepared) => prepared.additionalContext.content[0].text
  const plain = await new SessionReferenceResolver(hostReturning((op, id) => (op === 'readSurface' ? small(id) : '[]'))).prepare(TARGET, CONTENT, refs)
  // One plain value and one Promise: the call waits for the Promise, then runs.
  const mixed = new SessionReferenceResolver(hostReturning((op, id) => (op !== 'readSurface' ? '[]' : id === 'a' ? small(id) : later(small(id), 20))))
  assert.equal(text(await mixed.prepare(TARGET, CONTENT, refs)), text(plain))
  // Big snapshots from Promises go to the library threads, with the same result as plain ones.
  const bigPlain = await new SessionReferenceResolver(hostReturning((op, id) => (op === 'readSurface' ? big(id) : '[]'))).prepare(TARGET, CONTENT, refs)
  const bigLater = await new SessionReferenceResolver(hostReturning((op, id) => (op === 'readSurface' ? later(big(id)) : '[]'))).prepare(TARGET, CONTENT, refs)
  assert.equal(text(bigLater), text(bigPlain))
  assert.equal(bigLater.additionalContext.source.references[0].truncated, true)
  // A read that fails fails the call at once, though the other read never settles.
  const failing = new SessionReferenceResolver(
    hostReturning((op, id) => (op !== 'readSurface' ? '[]' : id === 'a' ? new Promise(() => {}) : Promise.reject(new Error('disk on fire')))),
  )
  const started = performance.now()
  const error = await rejection(failing.prepare(TARGET, CONTENT, refs))
  assert.equal(error.code, 'SESSION_REFERENCE_READ_FAILED')
  assert.match(error.message, /disk on fire/)
  assert.ok(performance.now() - started < 2000)
})

test('50 concurrent prepares whose host reads files with fs.promises all complete', { timeout: 60000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsr-node-'))
  try {
    const ids = Array.from({ length: 20 }, (_, i) => `s${i}`)
    for (const id of ids) {
      fs.writeFileSync(path.join(dir, `${id}.json`), JSON.stringify(snapshot(id, { cwd: '/work' })))
      fs.writeFileSync(path.join(dir, `${id}.title`), `Title of ${id}`)
    }
    const host = {
      async listSessions() {
        const names = await fs.promises.readdir(dir)
        return names.filter((n) => n.endsWith('.json')).map((n) => ({ id: n.slice(0, -5), createdAt: 1, cwd: '/work' }))
      },
      readTitle: (id) => fs.promises.readFile(path.join(dir, `${id}.title`), 'utf8'),
      // A Buffer straight from fs: handed to the library without a copy.
      readSurface: (id) => fs.promises.readFile(path.join(dir, `${id}.json`)),
    }
    const resolver = new SessionReferenceResolver(host)
    const calls = Array.from({ length: 50 }, (_, i) =>
      resolver.prepare(TARGET, [{ type: 'text', text: `call ${i}` }], [
        { sessionId: ids[i % 20] },
        { sessionId: ids[(i + 7) % 20] },
        { sessionId: ids[(i + 13) % 20] },
      ]),
    )
    calls.push(resolver.candidates(TARGET, 'title of s1'))
    const results = await Promise.all(calls)
    for (const [i, r] of results.slice(0, 50).entries()) {
      assert.equal(r.content[0].text, `call ${i}`)
      assert.equal(r.additionalContext.source.references.length, 3)
      assert.ok(r.additionalContext.content[0].text.includes(`question in ${ids[i % 20]}`))
    }
    assert.deepEqual(
      results[50].map((c) => c.sessionId).sort(),
      ['s1', 's10', 's11', 's12', 's13', 's14', 's15', 's16', 's17', 's18', 's19'],
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('an idle resolver does not keep the process alive; a pending call does until it settles', () => {
  const script = `
    const { SessionReferenceResolver } = require(${JSON.stringify(path.join(__dirname, '..'))})
    const host = { listSessions: () => [], readTitle: () => null,
      readSurface: (id) => new Promise((r) => setTimeout(() => r({ session: { id, createdAt: 1 }, capturedThroughSeq: null, events: [] }), 50)) }
    const resolver = new SessionReferenceResolver(host)
    if (process.argv[1] === 'call') {
      resolver.prepare({ id: 't' }, [], [{ sessionId: 'a' }]).then((r) => console.log(r.additionalContext.source.kind))
    }`
  const idle = execFileSync(process.execPath, ['-e', script, 'idle'], { timeout: 10000, encoding: 'utf8' })
  assert.equal(idle, '')
  const call = execFileSync(process.execPath, ['-e', script, 'call'], { timeout: 10000, encoding: 'utf8' })
  assert.equal(call.trim(), 'session-reference')
})

test('prompts cross back apart from the JSON and land in their own messages', async () => {
  const resolver = new SessionReferenceResolver(memoryHost({ surfaces: { a: snapshot('a'), b: snapshot('b') } }))
  const earlier = await resolver.prepare(TARGET, CONTENT, [{ sessionId: 'a' }])
  const context = earlier.additionalContext
  assert.match(context.content[0].text, /question in a/)
  // An earlier context message passes through unchanged, between new ones.
  const out = await resolver.prepareMessages(TARGET, [
    userMessage('@[b](dsh-session:ImIi)', 'm1'),
    context,
    userMessage('@[a](dsh-session:ImEi) and @[b](dsh-session:ImIi)', 'm2'),
  ])
  assert.equal(out.length, 5)
  assert.match(out[1].content[0].text, /question in b/)
  assert.doesNotMatch(out[1].content[0].text, /question in a/)
  assert.deepEqual(out[2], context)
  assert.match(out[4].content[0].text, /question in a[^]*question in b/)
  assert.deepEqual(Object.keys(out[4]), ['source', 'content', 'role', 'id'])
})

test('each distinct source is read once, and nothing is read for references that fail validation', async () => {
  const host = memoryHost({ surfaces: { a: snapshot('a'), b: snapshot('b') } })
  const resolver = new SessionReferenceResolver(host, { maxReferences: 2 })
  const prepared = await resolver.prepare(TARGET, CONTENT, [{ sessionId: 'a' }, { sessionId: 'b', label: 'B' }, { sessionId: 'a', label: 'dup' }])
  assert.deepEqual(prepared.additionalContext.source.references.map((r) => [r.sessionId, r.label]), [['a', 'a'], ['b', 'B']])
  assert.equal(host.calls.readSurface, 2)
  for (const [refs, code] of [
    [[{ sessionId: 'a' }, { sessionId: 'b' }, { sessionId: 'c' }], 'SESSION_REFERENCE_TOO_MANY'],
    [[{ sessionId: 'a' }, { sessionId: 5 }], 'SESSION_REFERENCE_INVALID_REFERENCE'],
    [[{ sessionId: 'a' }, { sessionId: 'target' }], 'SESSION_REFERENCE_SELF_REFERENCE'],
  ]) {
    await assert.rejects(resolver.prepare(TARGET, CONTENT, refs), { code })
  }
  assert.equal(host.calls.readSurface, 2)
})
