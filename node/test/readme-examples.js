'use strict'
// The README's examples as a user runs them: each saved as a file in a
// directory of their own, outside this repository, where the package is
// installed (node_modules/dsh-session-reference), and run with `node FILE`
// from there, with the environment variables the README tells them to set.
// Used by test/readme.test.js (against this package) and by
// scripts/test-dist.sh (against the packed tarballs, as ES modules and as
// CommonJS); run-tests.sh type-checks the same examples (writeForTsc).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const packageDir = path.join(__dirname, '..')
const repoDir = path.join(packageDir, '..')
const README = path.join(packageDir, 'README.md')

/**
 * The variables the README's `sh` block exports for the examples that read
 * the repository's sample data, got by running that block with bash from
 * `cwd`, with this checkout for its "/path/to/checkout".
 */
function readmeEnv(cwd, readme = README) {
  const blocks = [...fs.readFileSync(readme, 'utf8').matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1])
  const block = blocks.find((b) => /^export DSR_/m.test(b))
  if (!block) return {}
  const names = [...block.matchAll(/^export (DSR_\w+)=/gm)].map((m) => m[1])
  const script = `{\n${block.replaceAll('/path/to/checkout', repoDir)}\n} >/dev/null\n${names.map((n) => `printf '%s\\0' "$${n}"`).join('\n')}\n`
  const values = execFileSync('bash', ['-e', '-c', script], { cwd, encoding: 'utf8' }).split('\0')
  const env = Object.fromEntries(names.map((name, i) => [name, values[i]]))
  for (const [name, value] of Object.entries(env)) {
    if (!value || !fs.existsSync(value)) throw new Error(`the README's ${name}=${value} does not exist`)
  }
  return env
}

/** The ```js blocks of the README, each with the ```text block right after it (or "true\n"). */
function readmeExamples(readme = README) {
  const text = fs.readFileSync(readme, 'utf8')
  const blocks = [...text.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], body: m[2] }))
  const examples = blocks.flatMap((block, i) =>
    block.lang === 'js' ? [{ code: block.body, output: blocks[i + 1]?.lang === 'text' ? blocks[i + 1].body : 'true\n' }] : [],
  )
  if (examples.length < 2) throw new Error(`${readme} has fewer than two js examples`)
  return examples
}

/** A fresh directory outside the repository, as a user's own project. */
function userDir(prefix = 'dsr-node-readme-') {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))
  const rel = path.relative(fs.realpathSync(repoDir), dir)
  if (!rel.startsWith('..') && !path.isAbsolute(rel)) throw new Error(`${dir} is inside the repository: set TMPDIR elsewhere`)
  return dir
}

/** The example as CommonJS: the imports become require() calls, the body an async function. */
function toCommonJs(code) {
  const body = code.replace(/import\s*\{([^}]*)\}\s*from\s*'dsh-session-reference'/g, "const {$1} = require('dsh-session-reference')")
  if (/^\s*import\s/m.test(body)) throw new Error('an import statement is left in the CommonJS version')
  return `'use strict'\n;(async () => {\n${body}\n})().catch((e) => { console.error(e); process.exit(1) })\n`
}

/**
 * Runs every README example from `app` (a directory whose node_modules holds
 * the package) as `node example-N.mjs` (and `node example-N.cjs` with
 * `commonjs`), and checks that each prints what the README shows.
 */
function runReadmeExamples(app, { readme = README, commonjs = false } = {}) {
  const examples = readmeExamples(readme)
  const env = { ...process.env, ...readmeEnv(app, readme) }
  delete env.NODE_TEST_CONTEXT
  delete env.NODE_OPTIONS
  examples.forEach(({ code, output }, i) => {
    const variants = [['mjs', code]]
    if (commonjs) variants.push(['cjs', toCommonJs(code)])
    for (const [ext, text] of variants) {
      const name = `example-${i}.${ext}`
      fs.writeFileSync(path.join(app, name), text)
      const stdout = execFileSync(process.execPath, [name], { cwd: app, env, encoding: 'utf8', timeout: 60000 })
      if (stdout !== output) throw new Error(`${name} (in ${app}) printed\n${stdout}\ninstead of\n${output}`)
    }
  })
  return examples.length
}

/** Writes the examples where tsc resolves `import 'dsh-session-reference'` to this package's types. */
function writeForTsc() {
  const dir = path.join(packageDir, 'test', 'readme-examples')
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir)
  readmeExamples().forEach(({ code }, i) => fs.writeFileSync(path.join(dir, `example-${i}.mjs`), code))
}

module.exports = { packageDir, repoDir, readmeEnv, readmeExamples, userDir, runReadmeExamples, writeForTsc }
