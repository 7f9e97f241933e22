'use strict'
// The embedded DSH session store through the Node API, on the fixture roots
// and their expected.json (produced by DSH's own loader and resolver).

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const fs = require('node:fs')

const { DshSessionStore, openDshSessionStore, SessionReferenceResolver, SessionReferenceError } = require('..')
const { repoRoot } = require('./helpers.js')

const fixtures = path.join(repoRoot, 'tests', 'fixtures', 'dsh-logs')
const expected = JSON.parse(fs.readFileSync(path.join(fixtures, 'expected.json'), 'utf8'))

test('opening a root that is not a directory throws a Node-style error', () => {
  assert.throws(() => openDshSessionStore(path.join(fixtures, 'no-such-root')), { code: 'ENOENT' })
  assert.throws(() => openDshSessionStore(path.join(fixtures, 'expected.json')), { code: 'ENOTDIR' })
  assert.throws(() => new DshSessionStore(), TypeError)
})

for (const [name, root] of Object.entries(expected.roots)) {
  test(`store root ${name}`, async (t) => {
    const store = DshSessionStore.open(path.join(fixtures, name))
    assert.equal(store.root, path.join(fixtures, name))

    await t.test('listing', async () => {
      // The header lines without `type`, as DSH's store and the Python front list them.
      assert.deepEqual(await store.listSessions(), root.listing)
    })

    await t.test('titles and surfaces', async () => {
      for (const s of root.sessions) {
        if (s.titleObservation === 'fulfilled') {
          assert.equal(await store.readTitle(s.sessionId), s.title)
        } else {
          await assert.rejects(store.readTitle(s.sessionId), { code: 'SESSION_REFERENCE_READ_FAILED' })
        }
        if (s.load.ok) {
          const surface = await store.readSurface(s.sessionId)
          assert.equal(surface.capturedThroughSeq, s.surface.capturedThroughSeq)
          assert.deepEqual(
            surface.events.map((e) => e.seq),
            s.surface.seqs,
          )
        } else {
          await assert.rejects(store.readSurface(s.sessionId), SessionReferenceError)
        }
      }
    })

    await t.test('prepare through a resolver over the store', async () => {
      for (const [configName, config] of Object.entries(expected.configs)) {
        const resolver = new SessionReferenceResolver(store, config)
        for (const s of root.sessions) {
          const want = s.prepare[configName]
          const run = resolver.prepare(expected.target, expected.prepareInput.content, [{ sessionId: s.sessionId }])
          if (want.error) {
            await assert.rejects(run, (e) => e instanceof SessionReferenceError && e.code === want.error)
            continue
          }
          const prepared = await run
          assert.deepEqual(prepared.content, expected.prepareInput.content)
          assert.equal(prepared.additionalContext.content[0].text, want.prompt, `${s.sessionId} ${configName}`)
          assert.deepEqual(prepared.additionalContext.source, want.source)
        }
      }
    })

    if (root.candidates) {
      await t.test('candidates', async () => {
        for (const c of root.candidates) {
          const resolver = new SessionReferenceResolver(store, { candidateLimit: c.candidateLimit })
          assert.deepEqual(await resolver.candidates(expected.target, c.query), c.expected, JSON.stringify(c.query))
        }
      })
    }
  })
}

test('the store is also an ordinary query for a JavaScript host wrapper', async () => {
  const store = openDshSessionStore(path.join(fixtures, 'raw'))
  // A host that delegates to the store from JavaScript reads the same data.
  const delegating = {
    listSessions: () => store.listSessions(),
    readTitle: (id) => store.readTitle(id),
    readSurface: (id) => store.readSurface(id),
  }
  const direct = new SessionReferenceResolver(store)
  const viaJs = new SessionReferenceResolver(delegating)
  const refs = [{ sessionId: 'multi-turn' }, { sessionId: 'goal-wrapup', label: 'goal' }]
  const a = await direct.prepare(expected.target, [{ type: 'text', text: 'x' }], refs)
  const b = await viaJs.prepare(expected.target, [{ type: 'text', text: 'x' }], refs)
  assert.equal(a.additionalContext.content[0].text, b.additionalContext.content[0].text)
  assert.deepEqual(a.additionalContext.source, b.additionalContext.source)
})
