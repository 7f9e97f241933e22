// Writes the DSH sessions root the browser tests read: a few ordinary
// sessions, one of 80 messages whose first is a compaction checkpoint (the
// reader pages through it), and one whose title and text are markup.
// Usage: node tests/web/fixture.mjs DIR
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The session of 80 messages. */
export const LONG = { id: 'parser-rewrite', title: 'Parser rewrite notes', messages: 80 };
/** The session whose title and text are markup. */
export const HOSTILE = {
  id: 'hostile-markup',
  title: 'Markup <img src=x onerror="window.__pwned=1"> title',
  text: 'Look: </script><script>window.__pwned=2</script> and <img src=x onerror="window.__pwned=3"> onerror',
};
/** Two sessions that mention "backoff" only in what was said; the second is the one the flow picks. */
export const BACKOFF = [
  { id: 'retry-budget', title: 'Retry budget for the uploader', said: 'The uploader retries with exponential backoff capped at 30 s.' },
  { id: 'flaky-websocket', title: 'Flaky websocket tests', said: 'The reconnect backoff doubles each try; the test waited a fixed 100 ms, so it flaked.' },
];

function projectDir(cwd) {
  return cwd === undefined ? '_no-cwd' : `--${cwd.replace(/[/\\:]+/g, '-').replace(/^-+/, '')}--`;
}

function user(text, source = { kind: 'user' }) {
  return { type: 'user/message', surfaceOp: 'append', data: { role: 'user', content: [{ type: 'text', text }], source } };
}

function assistant(text) {
  return { type: 'assistant/message', surfaceOp: 'append', data: { message: { role: 'assistant', content: [{ type: 'text', text }] } } };
}

function writeSession(root, { id, cwd, createdAt, title, events }) {
  const dir = join(root, projectDir(cwd), id);
  mkdirSync(dir, { recursive: true });
  const header = { type: 'session', version: 0, id, createdAt, delegationDepth: 0 };
  if (cwd !== undefined) header.cwd = cwd;
  const lines = [JSON.stringify(header)];
  let seq = 0;
  for (const event of [...events, { type: 'session/title', data: { title, messageSeqs: [0] } }]) {
    lines.push(JSON.stringify({ seq, time: createdAt + seq, ...event }));
    seq += 1;
  }
  writeFileSync(join(dir, 'session.jsonl'), `${lines.join('\n')}\n`);
}

/** Writes the root into `root` (an empty or missing directory). */
export function writeFixture(root) {
  const day = Date.UTC(2026, 10, 20, 9, 30);
  const filler = 'The tokenizer now keeps byte offsets so errors point at the exact column; '.repeat(12);
  const long = [];
  for (let i = 0; i < LONG.messages; i += 1) {
    if (i === 0) {
      long.push(user(`Checkpoint 0: the story so far. We chose a hand-written recursive descent parser. ${filler}`,
        { kind: 'plugin', plugin: 'compact' }));
    } else if (i % 2 === 1) {
      long.push(user(`Question ${i}: what about case ${i} of the grammar? ${filler}`));
    } else {
      long.push(assistant(`Answer ${i}: case ${i} is handled by the precedence table. ${filler}`));
    }
  }
  writeSession(root, { id: LONG.id, cwd: '/home/dev/parser', createdAt: day, title: LONG.title, events: long });
  BACKOFF.forEach((s, i) => writeSession(root, {
    id: s.id, cwd: '/home/dev/web', createdAt: day + (i + 1) * 3_600_000, title: s.title,
    events: [user(`Why does this fail now and then? (${s.title})`), assistant(s.said)],
  }));
  writeSession(root, {
    id: HOSTILE.id, createdAt: day + 5 * 3_600_000, title: HOSTILE.title,
    events: [user(HOSTILE.text), assistant(`Quoted back: ${HOSTILE.text}`)],
  });
  const others = ['Release checklist for 0.2', 'Benchmark the store on 10,000 sessions', 'Dark mode colours'];
  others.forEach((title, i) => writeSession(root, {
    id: `other-${i}`, createdAt: day - (i + 1) * 86_400_000, title,
    events: [user(`Notes on ${title}.`), assistant(`Done: ${title}.`)],
  }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (!process.argv[2]) {
    console.error('usage: node tests/web/fixture.mjs DIR');
    process.exit(2);
  }
  writeFixture(process.argv[2]);
}
