// The ES module entry exposes the same objects as the CommonJS one.
import test from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

import * as esm from 'dsh-session-reference'

const require = createRequire(import.meta.url)
const cjs = require('dsh-session-reference')

test('import and require give the same API', () => {
  assert.deepEqual(Object.keys(esm).sort(), Object.keys(cjs).sort())
  for (const key of Object.keys(cjs)) assert.equal(esm[key], cjs[key], key)
  assert.equal(esm.SESSION_REFERENCE_SCHEME, 'dsh-session:')
  assert.equal(esm.MAX_REFERENCES, 3)
  assert.equal(esm.DEFAULT_CANDIDATE_LIMIT, 50)
  assert.equal(esm.DEFAULT_MAX_REFERENCE_BYTES, 65536)
})

test('errors from the ES entry are SessionReferenceErrors', () => {
  assert.throws(() => esm.decodeSessionReferenceUri('dsh-session:'), (e) => e instanceof esm.SessionReferenceError)
})
