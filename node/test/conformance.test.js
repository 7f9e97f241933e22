'use strict'
// Every vector of the conformance set, through the public Node API.
// DSR_CONFORMANCE_DIR selects another vector set in the same format.

const test = require('node:test')
const assert = require('node:assert/strict')

const dsr = require('..')
const { vectors, STYLES, memoryHost } = require('./helpers.js')

const { SessionReferenceResolver, SessionReferenceError } = dsr

/** Runs `fn` and returns the code it failed with (or fails the test). */
async function codeOf(fn) {
  try {
    await fn()
  } catch (error) {
    assert.ok(error instanceof SessionReferenceError, `expected a SessionReferenceError, got ${error}`)
    assert.ok(error instanceof Error)
    return error.code
  }
  assert.fail('expected an error')
}

test('uri.json', () => {
  const { valid, invalid } = vectors('uri.json')
  assert.ok(valid.length > 0 && invalid.length > 0)
  for (const { sessionId, uri } of valid) {
    assert.equal(dsr.encodeSessionReferenceUri(sessionId), uri)
    assert.equal(dsr.decodeSessionReferenceUri(uri), sessionId)
  }
  for (const { uri, error, note } of invalid) {
    assert.throws(
      () => dsr.decodeSessionReferenceUri(uri),
      (e) => e instanceof SessionReferenceError && e.code === error,
      `${note}: ${JSON.stringify(uri)}`,
    )
  }
})

test('mention.json', () => {
  const cases = vectors('mention.json')
  assert.ok(cases.length > 0)
  for (const c of cases) {
    const reference = 'label' in c ? { sessionId: c.sessionId, label: c.label } : { sessionId: c.sessionId }
    assert.equal(dsr.formatSessionReferenceMention(reference), c.mention)
  }
})

test('parse.json', () => {
  const cases = vectors('parse.json')
  assert.ok(cases.length > 0)
  for (const c of cases) {
    if (c.error) {
      assert.throws(
        () => dsr.parseSessionReferenceText(c.text),
        (e) => e instanceof SessionReferenceError && e.code === c.error,
        JSON.stringify(c.text),
      )
    } else {
      assert.deepEqual(dsr.parseSessionReferenceText(c.text), c.expected, JSON.stringify(c.text))
    }
  }
})

test('tag_safe.json', () => {
  const cases = vectors('tag_safe.json')
  assert.ok(cases.length > 0)
  for (const c of cases) {
    // A JavaScript caller holds parsed values: value_json is what JSON.parse saw.
    const value = c.value_json === undefined ? c.value : JSON.parse(c.value_json)
    assert.equal(dsr.stringifyTagSafeJson(value), c.serialized, c.note || JSON.stringify(c.value))
    assert.ok(!c.serialized.includes('<'))
  }
})

test('config.json', () => {
  const cases = vectors('config.json')
  assert.ok(cases.length > 0)
  const host = memoryHost()
  for (const c of cases) {
    if (c.ok) {
      assert.doesNotThrow(() => new SessionReferenceResolver(host, c.config), JSON.stringify(c.config))
    } else {
      assert.throws(
        () => new SessionReferenceResolver(host, c.config),
        (e) => e instanceof SessionReferenceError && e.code === c.error,
        JSON.stringify(c.config),
      )
    }
  }
})

const HEADER_END = '<referenced-sessions>\n'
const TRAILER = '\n</referenced-sessions>'

/** For a case whose config is invalid: checks that the constructor rejects it, and says so. */
function rejectsConfig(host, c) {
  if (c.expected.error !== 'SESSION_REFERENCE_INVALID_CONFIG') return false
  assert.throws(
    () => new SessionReferenceResolver(host, c.config),
    (e) => e instanceof SessionReferenceError && e.code === c.expected.error,
  )
  return true
}

test('prepare.json', async (t) => {
  const cases = vectors('prepare.json')
  assert.ok(cases.length > 0)
  for (const [i, c] of cases.entries()) {
    await t.test(c.name, async () => {
      const style = STYLES[i % STYLES.length]
      const host = memoryHost({ surfaces: c.surfaces, style })
      const target = { id: c.targetId }
      const content = [{ type: 'text', text: `message ${i}` }]
      if (rejectsConfig(host, c)) return
      const resolver = new SessionReferenceResolver(host, c.config)
      if (c.expected.error) {
        assert.equal(await codeOf(() => resolver.prepare(target, content, c.references)), c.expected.error)
        return
      }
      const prepared = await resolver.prepare(target, content, c.references)
      assert.deepEqual(prepared.content, content)
      if (c.expected.expected_none) {
        assert.deepEqual(Object.keys(prepared), ['content'])
        assert.equal(host.calls.readSurface, 0)
        return
      }
      const ctx = prepared.additionalContext
      assert.deepEqual(Object.keys(prepared), ['content', 'additionalContext'])
      assert.equal(ctx.role, 'user')
      assert.match(ctx.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.equal(ctx.content.length, 1)
      assert.equal(ctx.content[0].type, 'text')
      assert.equal(ctx.content[0].text, c.expected.prompt)
      assert.deepEqual(ctx.source, c.expected.source)
      // The per-source budget holds for the rendered data objects.
      const budget = (c.config && c.config.maxReferenceBytes) || dsr.DEFAULT_MAX_REFERENCE_BYTES
      const json = ctx.content[0].text.slice(ctx.content[0].text.indexOf(HEADER_END) + HEADER_END.length, -TRAILER.length)
      for (const source of JSON.parse(json)) {
        assert.ok(Buffer.byteLength(dsr.stringifyTagSafeJson(source)) <= budget)
      }
    })
  }
})

test('candidates.json', async (t) => {
  const cases = vectors('candidates.json')
  assert.ok(cases.length > 0)
  for (const [i, c] of cases.entries()) {
    await t.test(c.name, async () => {
      const style = STYLES[i % STYLES.length]
      const host = memoryHost({ sessions: c.sessions, titles: c.titles, style })
      if (rejectsConfig(host, c)) return
      const resolver = new SessionReferenceResolver(host, c.config)
      if ('limit' in c) {
        const run = () => resolver.listCandidates(c.target, c.query, c.limit)
        if (c.expected.error) {
          assert.equal(await codeOf(run), c.expected.error)
          assert.equal(await codeOf(() => resolver.candidates(c.target, c.query, c.limit)), c.expected.error)
          return
        }
        const list = await run()
        assert.deepEqual(
          list,
          c.expected.map(({ mention, ...rest }) => rest),
        )
        for (const [j, item] of list.entries()) {
          assert.equal(dsr.formatSessionReferenceMention(item), c.expected[j].mention)
        }
        // candidates() with the same explicit limit gives the mentions itself.
        assert.deepEqual(await resolver.candidates(c.target, c.query, c.limit), c.expected)
      } else {
        const run = () => resolver.candidates(c.target, c.query)
        if (c.expected.error) {
          assert.equal(await codeOf(run), c.expected.error)
          return
        }
        assert.deepEqual(await run(), c.expected)
      }
    })
  }
})
