'use strict'
// The hardened mode through the Node API, on the red-team DSH root
// (tests/red-team/): the config keys reach the core, and with
// HARDENED_CONFIG no hidden character and no credential reaches the prompt.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const fs = require('node:fs')

const {
  DshSessionStore,
  SessionReferenceResolver,
  HARDENED_CONFIG,
  REDACTED_SECRETS_KEY,
  formatSessionReferenceMention,
} = require('..')
const { repoRoot } = require('./helpers.js')

const redTeam = path.join(repoRoot, 'tests', 'red-team')
const spec = JSON.parse(fs.readFileSync(path.join(redTeam, 'sessions.json'), 'utf8'))
const store = DshSessionStore.open(path.join(redTeam, 'root'))
const target = { id: 'new-chat', cwd: '/home/dev/red' }
// Tag characters (as surrogate pairs), bidirectional controls, zero-width characters.
const HIDDEN = /\udb40[\udc00-\udc7f]|[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/

async function prepareAll(config) {
  const resolver = new SessionReferenceResolver(store, config)
  const out = []
  for (const s of spec.sessions) {
    const text = `Compare ${formatSessionReferenceMention({ sessionId: s.id, label: s.title })} please.`
    const messages = [{ role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text }] }]
    const [rewritten, context] = await resolver.prepareMessages(target, messages)
    out.push({ s, text: rewritten.content[0].text, prompt: context.content[0].text, meta: context.source.references[0] })
  }
  return out
}

test('HARDENED_CONFIG is the frozen preset and REDACTED_SECRETS_KEY its metadata key', () => {
  assert.deepEqual(HARDENED_CONFIG, { hardened: true })
  assert.ok(Object.isFrozen(HARDENED_CONFIG))
  assert.equal(REDACTED_SECRETS_KEY, 'redactedSecrets')
})

test('with the preset, no hidden character and no credential reaches the prompt or the user text', async () => {
  const secrets = spec.secrets.map((s) => s.value)
  for (const { s, text, prompt, meta } of await prepareAll({ ...HARDENED_CONFIG, maxReferenceBytes: 65536 })) {
    assert.doesNotMatch(prompt, HIDDEN, s.id)
    assert.doesNotMatch(text, HIDDEN, s.id)
    assert.doesNotMatch(text, /[\n\r]/, s.id)
    for (const secret of secrets) assert.ok(!prompt.includes(secret) && !text.includes(secret), `${s.id}: ${secret}`)
    const expected = Object.values(s.secretsByKind).reduce((a, b) => a + b, 0)
    assert.equal(meta[REDACTED_SECRETS_KEY], expected, s.id)
    assert.ok([...meta.label].length <= 100, meta.label)
    assert.equal(meta.sessionId, s.id)
  }
})

test('without options the output is the plain one, and the metadata has no redaction count', async () => {
  const plain = await prepareAll(undefined)
  const off = await prepareAll({ hardened: false, redactSecrets: false, escapeInvisible: false, sanitizeLabels: false })
  assert.deepEqual(off, plain)
  assert.ok(plain.some(({ prompt }) => HIDDEN.test(prompt)))
  assert.ok(plain.every(({ meta }) => !(REDACTED_SECRETS_KEY in meta)))
})

test('each option alone, and an explicit false beating the preset', async () => {
  const [tag] = await prepareAll({ escapeInvisible: true })
  assert.doesNotMatch(tag.prompt, HIDDEN)
  assert.match(tag.text, HIDDEN, 'labels are left alone without sanitizeLabels')
  assert.ok(!(REDACTED_SECRETS_KEY in tag.meta))
  const noEscape = await prepareAll({ hardened: true, escapeInvisible: false })
  assert.match(noEscape[0].prompt, HIDDEN)
  assert.doesNotMatch(noEscape[0].text, HIDDEN)
  assert.equal(typeof noEscape[0].meta[REDACTED_SECRETS_KEY], 'number')
})

test('non-boolean hardening keys are SESSION_REFERENCE_INVALID_CONFIG', () => {
  for (const key of ['hardened', 'redactSecrets', 'escapeInvisible', 'sanitizeLabels']) {
    for (const bad of [1, 'true', {}, [], 0]) {
      assert.throws(() => new SessionReferenceResolver(store, { [key]: bad }), { code: 'SESSION_REFERENCE_INVALID_CONFIG' }, `${key}: ${bad}`)
    }
    assert.doesNotThrow(() => new SessionReferenceResolver(store, { [key]: null }))
    assert.doesNotThrow(() => new SessionReferenceResolver(store, { [key]: undefined }))
  }
  assert.throws(() => new SessionReferenceResolver(store, { maxReferences: true }), { code: 'SESSION_REFERENCE_INVALID_CONFIG' })
})
