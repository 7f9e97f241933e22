'use strict'
// The README's examples run as written, and print what the README says.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const packageDir = path.join(__dirname, '..')

/** The ```js blocks of the README, each with the ```text block right after it (if any). */
function readmeExamples() {
  const readme = fs.readFileSync(path.join(packageDir, 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], body: m[2] }))
  const examples = []
  for (const [i, block] of blocks.entries()) {
    if (block.lang !== 'js') continue
    const next = blocks[i + 1]
    examples.push({ code: block.body, output: next && next.lang === 'text' ? next.body : undefined })
  }
  return examples
}

/** Writes the examples where `import 'dsh-session-reference'` resolves to this package. */
function writeExamples() {
  const dir = path.join(packageDir, 'test', 'readme-examples')
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir)
  return readmeExamples().map((example, i) => {
    const file = path.join(dir, `example-${i}.mjs`)
    fs.writeFileSync(file, example.code)
    return { ...example, file }
  })
}

module.exports = { writeExamples }

if (require.main === module || process.env.NODE_TEST_CONTEXT) {
  test('README examples run and print what the README shows', () => {
    const examples = writeExamples()
    assert.ok(examples.length >= 2)
    for (const { file, output } of examples) {
      const stdout = execFileSync(process.execPath, [file], { cwd: packageDir, encoding: 'utf8', timeout: 30000 })
      if (output !== undefined) assert.equal(stdout, output)
      else assert.equal(stdout, 'true\n')
    }
  })
}
