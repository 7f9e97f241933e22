'use strict'
// The README's examples run as written, from a directory outside the
// repository where the package is installed, and print what the README says.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { packageDir, userDir, runReadmeExamples } = require('./readme-examples.js')

test('README examples run from a project outside the repository and print what the README shows', (t) => {
  const app = userDir()
  t.after(() => fs.rmSync(app, { recursive: true, force: true }))
  // What `npm install /path/to/checkout/node` makes: a link to the package.
  fs.mkdirSync(path.join(app, 'node_modules'))
  fs.symlinkSync(packageDir, path.join(app, 'node_modules', 'dsh-session-reference'), 'dir')
  fs.writeFileSync(path.join(app, 'package.json'), '{"name":"my-app","private":true}\n')
  assert.ok(runReadmeExamples(app) >= 3)
})
