'use strict'
// SessionSources: DSH, Claude Code and Codex sessions on disk through one query.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { SessionSources, openSessionSources, SessionReferenceResolver, SessionReferenceError } = require('..')

const repo = path.join(__dirname, '..', '..')
const foreign = path.join(repo, 'tests', 'fixtures', 'foreign-logs')
const dsh = path.join(repo, 'examples', 'sessions')

const all = () =>
  openSessionSources([
    { kind: 'claude-code', root: path.join(foreign, 'claude-code') },
    { kind: 'codex', root: path.join(foreign, 'codex', 'daaain') },
    { kind: 'dsh', root: dsh },
  ])

test('every source is listed newest first and each session reads', async () => {
  const s = all()
  assert.deepEqual(s.sources.map((x) => x.kind), ['claude-code', 'codex', 'dsh'])
  const list = await s.listSessions()
  const ids = list.map((h) => h.id)
  assert.ok(ids.includes('claude-code:system_reminder') && ids.includes('goal-wrapup'))
  assert.ok(ids.includes('codex:11111111-1111-4111-8111-111111111111'))
  const created = list.map((h) => h.createdAt)
  assert.deepEqual(created, [...created].sort((a, b) => b - a))
  assert.equal(await s.readTitle('codex:11111111-1111-4111-8111-111111111111'), 'List the synthetic files.')
  const snap = await s.readSurface('claude-code:dag_compact_after_rewind')
  assert.equal(snap.capturedThroughSeq, 11)
  assert.deepEqual(snap.conversation.slice(1), [
    { role: 'user', text: 'After compaction' },
    { role: 'assistant', text: 'Final answer' },
  ])
  assert.equal(snap.conversation[0].checkpoint, true)
  await assert.rejects(s.readSurface('codex:nope'), (e) => e.code === 'SESSION_REFERENCE_READ_FAILED')
})

test('a resolver over sources prepares foreign and DSH sessions', async () => {
  const r = new SessionReferenceResolver(all())
  const p = await r.prepare({ id: 'new' }, [], [{ sessionId: 'claude-code:system_reminder' }, { sessionId: 'goal-wrapup' }])
  const text = p.additionalContext.content[0].text
  assert.ok(text.includes('# Project notes') && !text.includes('cwd changed to') && text.includes('durable goal'))
})

test('a missing root is reported; a bad list is refused', async () => {
  const s = SessionSources.open([{ kind: 'claude-code', root: '/nonexistent/p' }, { kind: 'dsh', root: dsh }])
  assert.ok((await s.listSessions()).length > 0)
  const [missing, ok] = s.lastReport()
  assert.match(missing.error, /\/nonexistent\/p/)
  assert.ok(ok.sessions > 0)
  for (const bad of [[], [{ kind: 'gemini' }], [{ kind: 'codex' }, { kind: 'codex' }], [{ root: '/x' }]]) {
    assert.throws(() => SessionSources.open(bad), (e) => e instanceof SessionReferenceError && e.code === 'SESSION_REFERENCE_INVALID_CONFIG')
  }
  assert.throws(() => SessionSources.open('x'), TypeError)
  assert.throws(() => new SessionSources(), TypeError)
  SessionSources.open() // every default location that exists, possibly none
})

test('a root given one level off is read as meant and said; an empty one says what it holds', async () => {
  const sessions = path.join(foreign, 'codex', 'daaain', 'sessions')
  const s = openSessionSources([{ kind: 'codex', root: sessions }])
  assert.equal((await s.listSessions()).length, 4)
  const home = path.join(foreign, 'codex', 'daaain')
  assert.deepEqual(s.lastReport(), [
    { name: 'codex', sessions: 4, note: `${sessions} is the sessions/ directory of a Codex home: reading ${home}` },
  ])
  const other = openSessionSources([{ kind: 'codex', root: dsh }, { kind: 'dsh', root: dsh }])
  assert.ok((await other.listSessions()).length > 0)
  const [codex, store] = other.lastReport()
  assert.equal(codex.sessions, 0)
  assert.match(codex.note, /^no Codex session in .*: expected a Codex home, holding sessions\/ or archived_sessions\//)
  assert.equal(store.note, undefined)
})

test('sessions that cannot be read are named in the report until the next listing', async () => {
  const fs = require('node:fs')
  const os = require('node:os')
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dsr-unreadable-'))
  try {
    const root = path.join(tmp, 'sessions')
    fs.cpSync(dsh, root, { recursive: true })
    const log = path.join(root, '--home-dev-alpha--', 'goal-wrapup', 'session.jsonl')
    const lines = fs.readFileSync(log, 'utf8').split('\n')
    lines.splice(4, 1) // a seq gap
    fs.writeFileSync(log, lines.join('\n'))
    const s = openSessionSources([{ kind: 'dsh', root }])
    const found = await new SessionReferenceResolver(s).search({ id: 't' }, 'goal')
    assert.deepEqual(found.map((r) => r.sessionId), ['goal-wrapup'])
    const [store] = s.lastReport()
    assert.equal(store.unreadableCount, 1)
    assert.equal(store.unreadable[0].sessionId, 'goal-wrapup')
    assert.match(store.unreadable[0].why, /seq gap/)
    await s.listSessions()
    assert.equal(s.lastReport()[0].unreadable, undefined, 'a new listing starts afresh')
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
})

// Every kind the core reads (the error of an unknown kind lists them, from
// the core's SourceKind::ALL) is accepted and opened.
test('every source kind is accepted', async () => {
  let listed = null
  try {
    SessionSources.open([{ kind: 'no-such-kind', root: '/x' }])
  } catch (e) {
    assert.ok(e instanceof SessionReferenceError && e.code === 'SESSION_REFERENCE_INVALID_CONFIG')
    listed = e.message.split('use one of ')[1]
  }
  assert.ok(listed, 'the error lists the kinds')
  const kinds = listed.split(',').map((k) => k.trim())
  assert.deepEqual(kinds.slice(0, 3), ['dsh', 'claude-code', 'codex'])
  const fs = require('node:fs')
  const os = require('node:os')
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dsr-kinds-'))
  try {
    for (const kind of kinds) {
      const root = path.join(tmp, kind)
      fs.mkdirSync(root)
      const s = SessionSources.open([{ kind, root }])
      await s.listSessions().catch(() => {}) // a kind whose root is a database file reports the directory
      assert.deepEqual(s.lastReport().map((r) => r.name), [kind])
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
})
