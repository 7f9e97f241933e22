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

test('every DSH generation reads with no option: v4 beside v3 after an upgrade, a newer DSH left out', async () => {
  const generations = path.join(repoRoot, 'tests', 'fixtures', 'dsh-generations')
  const store = DshSessionStore.open(path.join(generations, 'upgraded-0.2'))
  assert.deepEqual(
    (await store.listSessions()).map((h) => h.id),
    ['tool-call-turn', 'team-targets', 'gen-v3'],
  )
  assert.equal(await store.readTitle('tool-call-turn'), 'Run it under DSH 0.2')
  const surface = await store.readSurface('tool-call-turn')
  assert.equal(surface.session.version, 4)
  assert.equal(surface.capturedThroughSeq, 27)
  const resolver = new SessionReferenceResolver(store)
  const labels = (await resolver.candidates({ id: 't', cwd: '/home/dev/gen' }, '')).map((c) => c.label)
  assert.deepEqual(labels, ['Run it under DSH 0.2', 'Use Agent Teams list_agents to', 'Rename agentPreset code to ptc'])
  const prepared = await resolver.prepare({ id: 't' }, [], [{ sessionId: 'tool-call-turn' }])
  assert.match(prepared.additionalContext.content[0].text, /SNAPSHOT_OK under 0\.2\./)

  const newer = DshSessionStore.open(path.join(generations, 'newer'))
  assert.deepEqual(
    (await newer.listSessions()).map((h) => h.id),
    ['tool-call-turn', 'gen-v0'],
  )
  await assert.rejects(newer.readSurface('from-a-newer-dsh'), /newer DSH/)
})

test('dshCompat profiles: capturedFormatVersion, candidate fields and the context window', async () => {
  const root = path.join(repoRoot, 'tests', 'fixtures', 'dsh-generations', 'zstd')
  const store = DshSessionStore.open(root)
  const later = new SessionReferenceResolver(store, { dshCompat: '0.1.7', referenceContextFraction: 0.5 })
  const prepared = await later.prepare({ id: 't' }, [], [{ sessionId: 'gen-v4-open' }], { contextWindow: 100000 })
  const ref = prepared.additionalContext.source.references[0]
  assert.deepEqual(Object.keys(ref).slice(0, 4), ['sessionId', 'label', 'capturedFormatVersion', 'capturedThroughSeq'])
  assert.equal(ref.capturedFormatVersion, 4)
  const [first] = await later.candidates({ id: 't', cwd: '/home/dev/gen' }, '')
  assert.deepEqual(Object.keys(first), ['sessionId', 'label', 'displayTitle', 'cwd', 'sameWorkspace', 'createdAt', 'mention'])
  const plain = await new SessionReferenceResolver(store).prepare({ id: 't' }, [], [{ sessionId: 'gen-v4-open' }])
  assert.equal('capturedFormatVersion' in plain.additionalContext.source.references[0], false)
  assert.throws(
    () => new SessionReferenceResolver(store, { dshCompat: '0.1.7', referenceContextFraction: 2 }),
    { code: 'SESSION_REFERENCE_INVALID_CONFIG' },
  )
  await assert.rejects(later.prepare({ id: 't' }, [], [], { contextWindow: -1 }), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
})
