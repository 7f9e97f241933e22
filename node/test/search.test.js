'use strict'
// Full-text search through the Node front: ranking and snippets, the
// discovery caches under a host's fingerprints, a host's own search,
// argument errors and AbortSignal.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')

const { SessionReferenceResolver, DshSessionStore, formatSessionReferenceMention } = require('..')
const { repoRoot } = require('./helpers.js')

const TARGET = { id: 'me', cwd: '/w' }

function surface(id, texts, cwd) {
  const events = texts.map((text, seq) =>
    seq % 2 === 0
      ? { seq, type: 'user/message', data: { role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } } }
      : { seq, type: 'assistant/message', data: { message: { role: 'assistant', content: [{ type: 'text', text }] } } },
  )
  return { session: { id, createdAt: 1, cwd: cwd ?? null }, capturedThroughSeq: events.length - 1, events }
}

/** Sessions in memory, counting surface reads, with versions as fingerprints. */
function host({ fingerprints = true } = {}) {
  const h = {
    sessions: [],
    titles: {},
    surfaces: {},
    versions: {},
    reads: 0,
    add(id, createdAt, cwd, title, texts) {
      h.sessions = h.sessions.filter((s) => s.id !== id)
      h.sessions.push(cwd === null ? { id, createdAt } : { id, createdAt, cwd })
      h.titles[id] = title
      h.surfaces[id] = surface(id, texts, cwd)
      h.versions[id] = (h.versions[id] ?? 0) + 1
    },
    listSessions: () => h.sessions,
    readTitle: (id) => h.titles[id] ?? null,
    readSurface: (id) => {
      h.reads++
      return h.surfaces[id]
    },
  }
  if (fingerprints) h.fingerprints = async (ids) => ids.map((id) => h.versions[id] ?? null)
  h.add('old', 1, '/w', null, ['we need a title index', 'ok'])
  h.add('new', 2, '/w', null, ['a title index, finally'])
  h.add('titled', 0, '/x', 'The Title Index', ['unrelated'])
  h.add('cjk', 3, null, null, ['发布版本 PR1137 已合并'])
  h.add('me', 9, '/w', 'title index', ['title index'])
  return h
}

test('search ranks, snippets and scopes', async () => {
  const r = new SessionReferenceResolver(host())
  const found = await r.search(TARGET, 'title index')
  assert.deepEqual(found.map((f) => f.sessionId), ['titled', 'new', 'old'])
  assert.deepEqual(found[2], {
    sessionId: 'old',
    label: 'old',
    cwd: '/w',
    createdAt: 1,
    mention: formatSessionReferenceMention({ sessionId: 'old' }),
    snippet: 'we need a title index',
    field: 'message',
    messageIndex: 0,
  })
  assert.equal(found[0].field, 'title')
  assert.equal(found[0].messageIndex, null)
  assert.deepEqual((await r.search(TARGET, '版本')).map((f) => f.sessionId), ['cjk'])
  assert.equal((await r.search(TARGET, '1137'))[0].snippet, '发布版本 PR1137 已合并')
  assert.deepEqual((await r.search(TARGET, 'title index', { scope: 'cwd' })).map((f) => f.sessionId), ['new', 'old'])
  assert.equal((await r.search(TARGET, 'title index', { limit: 1 })).length, 1)
  assert.deepEqual(await r.search(TARGET, '  '), [])
})

test('search caches under fingerprints and stays exact', async () => {
  const h = host()
  const r = new SessionReferenceResolver(h)
  await r.search(TARGET, 'index')
  assert.equal(h.reads, 4)
  await r.search(TARGET, 'index')
  assert.equal(h.reads, 4, 'nothing changed: nothing read')
  h.add('old', 1, '/w', null, ['now about brotli'])
  assert.deepEqual((await r.search(TARGET, 'brotli')).map((f) => f.sessionId), ['old'])
  assert.equal(h.reads, 5)
  const plain = host({ fingerprints: false })
  const rp = new SessionReferenceResolver(plain)
  await rp.search(TARGET, 'index')
  await rp.search(TARGET, 'index')
  assert.equal(plain.reads, 8, 'without fingerprints every search reads every surface')
})

test('a host search answers instead of the built-in index', async () => {
  const h = host()
  h.search = (request) => {
    if (request.query === 'builtin') return null
    assert.deepEqual(request, { target: { id: 'me', cwd: '/w' }, query: 'pg', limit: 50, scope: 'all' })
    return [
      { sessionId: 'me', createdAt: 1 },
      { sessionId: 'remote', createdAt: 5, label: 'From Postgres', snippet: 's', messageIndex: 4 },
    ]
  }
  const r = new SessionReferenceResolver(h)
  const found = await r.search(TARGET, 'pg')
  assert.deepEqual(found.map((f) => f.sessionId), ['remote'])
  assert.equal(found[0].mention, formatSessionReferenceMention({ sessionId: 'remote', label: 'From Postgres' }))
  assert.equal(found[0].messageIndex, 4)
  assert.deepEqual((await r.search(TARGET, 'builtin')).map((f) => f.sessionId), [])
})

test('search errors and AbortSignal', async () => {
  const r = new SessionReferenceResolver(host())
  await assert.rejects(r.search(TARGET, 'x', { limit: 0 }), { code: 'SESSION_REFERENCE_INVALID_REFERENCE' })
  await assert.rejects(r.search(TARGET, 'x', { scope: 'near' }), { code: 'SESSION_REFERENCE_INVALID_REFERENCE' })
  await assert.rejects(r.search(TARGET, 5), TypeError)
  const slow = host()
  slow.readSurface = () => new Promise(() => {})
  const controller = new AbortController()
  setTimeout(() => controller.abort(), 50)
  const started = Date.now()
  await assert.rejects(new SessionReferenceResolver(slow).search(TARGET, 'x', { signal: controller.signal }), {
    code: 'SESSION_REFERENCE_CANCELLED',
  })
  assert.ok(Date.now() - started < 3000)
})

test('search over the DSH store', async () => {
  const store = DshSessionStore.open(path.join(repoRoot, 'tests/fixtures/dsh-logs/raw'))
  const found = await new SessionReferenceResolver(store).search({ id: 't', cwd: '/home/dev/alpha' }, 'recovered')
  assert.deepEqual(
    found.map((f) => [f.sessionId, f.snippet, f.messageIndex]),
    [['compaction-recovery', 'COMPACTION RECOVERED', 1]],
  )
})
