'use strict'
// Pre-projected snapshots built from a host's own OpenAI- or Anthropic-style
// history: only user and assistant text reaches the prompt.

const test = require('node:test')
const assert = require('node:assert/strict')

const { SessionReferenceResolver, conversationSnapshot } = require('..')

const OPENAI = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'Use <tabs>?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'c1' }] },
  { role: 'tool', tool_call_id: 'c1', content: 'SECRET TOOL OUTPUT' },
  { role: 'assistant', content: [{ type: 'text', text: 'Spaces.' }] },
]
const ANTHROPIC = [
  { role: 'user', content: 'Use <tabs>?' },
  { role: 'assistant', content: [{ type: 'thinking', thinking: 'SECRET THOUGHT' }, { type: 'text', text: 'Spaces.' }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'SECRET TOOL OUTPUT' }] },
]

for (const [format, messages] of [['openai', OPENAI], ['anthropic', ANTHROPIC]]) {
  test(`conversationSnapshot from ${format} messages`, async () => {
    const snap = conversationSnapshot('other', messages, { format, cwd: '/w' })
    assert.deepEqual(snap, {
      session: { id: 'other', cwd: '/w' },
      capturedThroughSeq: messages.length - 1,
      conversation: [
        { role: 'user', text: 'Use <tabs>?' },
        { role: 'assistant', text: 'Spaces.' },
      ],
    })
    const resolver = new SessionReferenceResolver({
      listSessions: () => [{ id: 'other', createdAt: 1 }],
      readTitle: () => null,
      readSurface: () => snap,
    })
    const prepared = await resolver.prepare({ id: 'me' }, 'see', [{ sessionId: 'other' }])
    const prompt = prepared.additionalContext.content[0].text
    assert.ok(prompt.includes('{"role":"user","text":"Use \\u003ctabs>?"},{"role":"assistant","text":"Spaces."}'), prompt)
    assert.ok(!prompt.includes('SECRET'))
  })
}

test('conversationSnapshot options and errors', () => {
  assert.equal(conversationSnapshot('s', [], { capturedThroughSeq: 9 }).capturedThroughSeq, 9)
  assert.equal(conversationSnapshot('s', []).capturedThroughSeq, null)
  assert.throws(() => conversationSnapshot('s', [], { format: 'gemini' }), { code: 'ERR_INVALID_ARG_TYPE', message: /unknown message format/ })
  assert.throws(() => conversationSnapshot('s', [{ role: 'user', content: 5 }]), { code: 'ERR_INVALID_ARG_TYPE', message: /message 0/ })
  assert.throws(() => conversationSnapshot(1, []), { code: 'ERR_INVALID_ARG_TYPE' })
  assert.throws(() => conversationSnapshot('s', 'no'), { code: 'ERR_INVALID_ARG_TYPE' })
})
