'use strict'
// Bounded reads and excerpts through the Node front: pages within their
// budget that add up to the conversation, cursors both ways, `around`, a
// changed session, errors and AbortSignal; `range`/`around` in `prepare`,
// and references without them unchanged.

const test = require('node:test')
const assert = require('node:assert/strict')

const { SessionReferenceResolver, SessionReferenceError } = require('..')

const TARGET = { id: 'me', cwd: '/w' }
const HEADER_END = '<referenced-session-page>\n'
const FOOTER = '\n</referenced-session-page>'

function host(n) {
  const h = {
    texts: Array.from({ length: n }, (_, i) => `message ${i} <b> ${'word '.repeat((i % 7) * 5)}`),
    listSessions: () => [{ id: 's', createdAt: 1 }],
    readTitle: async () => 'Plans <v2>',
    readSurface: (id) => {
      const events = h.texts.map((text, seq) =>
        seq % 2 === 0
          ? { seq, type: 'user/message', data: { content: [{ type: 'text', text }], source: { kind: 'user' } } }
          : { seq, type: 'assistant/message', data: { message: { content: [{ type: 'text', text }] } } },
      )
      return JSON.stringify({ session: { id, cwd: '/w' }, capturedThroughSeq: 5, events })
    },
  }
  return h
}

function check(page, h, budget) {
  assert.ok(Buffer.byteLength(page.text) <= budget, `${Buffer.byteLength(page.text)} > ${budget}`)
  assert.equal(page.text.split('<').length - 1, 2, 'only the two tags')
  const body = JSON.parse(page.text.slice(page.text.indexOf(HEADER_END) + HEADER_END.length, -FOOTER.length))
  assert.equal(body.totalMessages, h.texts.length)
  assert.equal(page.totalMessages, h.texts.length)
  page.messages.forEach((m, k) => {
    assert.equal(m.index, page.messages[0].index + k)
    assert.equal(body.messages[k].text, m.text)
    if (m.omittedBytes === undefined) assert.equal(m.text, h.texts[m.index])
  })
  return page.messages.map((m) => m.index)
}

test('forward pages add up to the conversation, in order', async () => {
  const h = host(25)
  const r = new SessionReferenceResolver(h)
  let page = await r.read(TARGET, 's', { start: 0, maxBytes: 900 })
  assert.equal(page.prevCursor, undefined)
  assert.equal(page.label, 'Plans <v2>')
  const seen = []
  for (;;) {
    seen.push(...check(page, h, 900))
    if (page.nextCursor === undefined) break
    page = await r.read(TARGET, 's', { cursor: page.nextCursor, maxBytes: 900 })
  }
  assert.deepEqual(seen, Array.from({ length: 25 }, (_, i) => i))
})

test('the newest page, back, around, and past the end', async () => {
  const h = host(25)
  const r = new SessionReferenceResolver(h)
  const newest = await r.read(TARGET, 's', { maxTokens: 900 })
  assert.equal(newest.messages.at(-1).index, 24)
  assert.equal(newest.nextCursor, undefined)
  const back = await r.read(TARGET, 's', { cursor: newest.prevCursor, maxTokens: 900 })
  assert.equal(back.messages.at(-1).index, newest.messages[0].index - 1)
  const around = check(await r.read(TARGET, 's', { around: 12, maxBytes: 900 }), h, 900)
  assert.ok(around.includes(12) && Math.abs(12 - around[0] - (around.at(-1) - 12)) <= 1, `${around}`)
  const past = await r.read(TARGET, 's', { start: 99 })
  assert.deepEqual(past.messages, [])
  assert.equal(typeof past.prevCursor, 'string')
})

test('a changed session fails a cursor; errors and abort', async () => {
  const h = host(10)
  const r = new SessionReferenceResolver(h)
  const page = await r.read(TARGET, 's', { start: 0, maxBytes: 700 })
  h.texts.push('a new message')
  await assert.rejects(r.read(TARGET, 's', { cursor: page.nextCursor }), (e) => {
    return e instanceof SessionReferenceError && e.code === 'SESSION_REFERENCE_SESSION_CHANGED'
  })
  const code = (expected) => (e) => e instanceof SessionReferenceError && e.code === expected
  await assert.rejects(r.read({ id: 's' }, 's'), code('SESSION_REFERENCE_SELF_REFERENCE'))
  for (const bad of [{ start: 1, around: 2 }, { start: -1 }, { maxBytes: 0 }, { cursor: 'nope' }, { start: NaN }, { maxTokens: Infinity }]) {
    await assert.rejects(r.read(TARGET, 's', bad), code('SESSION_REFERENCE_INVALID_REFERENCE'), JSON.stringify(bad))
  }
  await assert.rejects(r.read(TARGET, 's', { maxBytes: 100 }), code('SESSION_REFERENCE_BUDGET_EXCEEDED'))
  await assert.rejects(r.read(TARGET, 5), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE')
  await assert.rejects(r.read(TARGET, 's', { cursor: 5 }), (e) => e instanceof TypeError)
  await assert.rejects(r.read(TARGET, 's', { signal: AbortSignal.abort() }), code('SESSION_REFERENCE_CANCELLED'))
})

test('hardened pages redact and escape', async () => {
  const h = host(2)
  h.texts[1] = 'key ghp_abcdefghijklmnopqrstuvwxyz0123456789 \u202e'
  const plain = await new SessionReferenceResolver(h).read(TARGET, 's')
  const hardened = await new SessionReferenceResolver(h, { hardened: true }).read(TARGET, 's')
  assert.ok(plain.text.includes('ghp_') && plain.redactedSecrets === undefined)
  assert.ok(!hardened.text.includes('ghp_') && hardened.text.includes('\\u202e'))
  assert.equal(hardened.redactedSecrets, 1)
})

test('excerpts in prepare; references without them are unchanged', async () => {
  const r = new SessionReferenceResolver(host(8))
  const whole = await r.prepare(TARGET, [], [{ sessionId: 's' }])
  const same = await r.prepare(TARGET, [], [{ sessionId: 's', range: null, around: null }])
  assert.deepEqual(same.additionalContext.content, whole.additionalContext.content)
  assert.deepEqual(same.additionalContext.source, whole.additionalContext.source)
  assert.equal(whole.additionalContext.source.references[0].range, undefined)
  const ranged = await r.prepare(TARGET, [], [{ sessionId: 's', range: { start: 2, end: 4 } }])
  const meta = ranged.additionalContext.source.references[0]
  assert.deepEqual(meta.range, { start: 2, end: 4 })
  assert.equal(meta.originalMessages, 2)
  const prompt = ranged.additionalContext.content[0].text
  assert.ok(prompt.includes('"range":{"start":2,"end":4},"conversation":['))
  assert.ok(prompt.includes('message 3 ') && !prompt.includes('message 4 '))
  const around = await r.prepare(TARGET, [], [{ sessionId: 's', around: 7 }])
  assert.equal(around.additionalContext.source.references[0].around, 7)
  await assert.rejects(
    r.prepare(TARGET, [], [{ sessionId: 's', range: { start: 3, end: 3 } }]),
    (e) => e.code === 'SESSION_REFERENCE_INVALID_REFERENCE',
  )
})
