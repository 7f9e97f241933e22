// Types of the public API of the `dsh-session-reference` npm package
// (`wrapper.js`). Hand-written; the native layer's generated types are in
// `index.d.ts` and are not part of the public API.

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject

/** A JSON object (keys whose value is `undefined` are left out, as `JSON.stringify` does). */
export interface JsonObject {
  [key: string]: JsonValue | undefined
}

/** A value, or a Promise (or any thenable) of it. */
export type MaybePromise<T> = T | PromiseLike<T>

/** The stable error codes of the contract. */
export type SessionReferenceErrorCode =
  | 'SESSION_REFERENCE_INVALID_CONFIG'
  | 'SESSION_REFERENCE_INVALID_REFERENCE'
  | 'SESSION_REFERENCE_SELF_REFERENCE'
  | 'SESSION_REFERENCE_TOO_MANY'
  | 'SESSION_REFERENCE_READ_FAILED'
  | 'SESSION_REFERENCE_BUDGET_EXCEEDED'
  | 'SESSION_REFERENCE_CANCELLED'
  | 'SESSION_REFERENCE_SESSION_CHANGED'

/**
 * An error of the session-reference library. Misuse of the API itself
 * (arguments of the wrong type) throws a `TypeError` with
 * `code === 'ERR_INVALID_ARG_TYPE'` instead.
 */
export declare class SessionReferenceError extends Error {
  constructor(code: SessionReferenceErrorCode, message: string, options?: { cause?: unknown })
  readonly name: 'SessionReferenceError'
  /** The stable code, e.g. `'SESSION_REFERENCE_READ_FAILED'`. */
  readonly code: SessionReferenceErrorCode
  /** For a cancellation: the `reason` of the `AbortSignal` that aborted. */
  readonly cause?: unknown
}

/** The session that is about to send a message. It may never reference itself. */
export interface SessionTarget {
  /** The target session's id. */
  id: string
  /** Its working directory; drives candidate ranking. */
  cwd?: string | null
}

/** One entry of `listSessions()`. Extra keys are allowed and ignored. */
export interface SessionHeader {
  /** The session id (any string). */
  id: string
  /** Creation time, epoch milliseconds. */
  createdAt: number
  /** The session's working directory, if it has one. */
  cwd?: string | null
  [key: string]: JsonValue | undefined
}

/** How a surface event entered the folded surface (informational). */
export type SurfaceOp = 'append' | { op: 'replace'; start: number; end: number }

/** One event of a surface snapshot, already folded. */
export interface SurfaceEvent {
  /** The raw-log seq of the event. */
  seq: number
  /** `'user/message'` and `'assistant/message'` are projected; others are dropped. */
  type: string
  /** The event's payload: a user message, or `{message}` for assistant messages. */
  data: JsonValue
  /** Epoch milliseconds (informational). */
  time?: number
  /** How the event entered the surface (informational). */
  surfaceOp?: SurfaceOp
  /** The raw events a checkpoint replaced (informational). */
  sourceEventSeqs?: number[]
  [key: string]: JsonValue | undefined
}

/** The current model-visible history of a session, as the host delivers it. */
export interface SurfaceSnapshot {
  /** The session's header. */
  session: SessionHeader
  /** The last raw-log seq the observation included; `null` for an empty log. */
  capturedThroughSeq: number | null
  /** The folded surface, in model-history order. */
  events: SurfaceEvent[]
}

/**
 * The session query a host implements. Each method may return its value
 * or a Promise of it; a throw or rejection is a read failure whose message
 * keeps the host's reason. For speed, `listSessions` and `readSurface` may
 * also return the JSON text, as a string or as bytes (a `Buffer` or
 * `Uint8Array`, passed to the library without a copy: do not modify it
 * afterwards). Methods are called from the library's worker threads through
 * the event loop, possibly concurrently.
 */
export interface SessionQuery {
  /** All sessions, in creation order. */
  listSessions(): MaybePromise<readonly SessionHeader[] | string | Uint8Array>
  /** The latest title of a session, or `null`/`undefined` when it has none. */
  readTitle(sessionId: string): MaybePromise<string | null | undefined>
  /** The current surface snapshot of a session. */
  readSurface(sessionId: string): MaybePromise<SurfaceSnapshot | ConversationSnapshot | string | Uint8Array>
  /**
   * Optional change detection: one value per id that changes whenever the
   * session may have changed (a log file's device, inode, size and mtime; a
   * version number), or `null` for a session without one; return `null` for
   * none at all. The resolver caches titles and indexed texts under them;
   * without this method every query reads what it needs again.
   */
  fingerprints?(sessionIds: string[]): MaybePromise<ReadonlyArray<string | number | null> | null | undefined>
  /**
   * Optional search implemented by the host (its own full-text index, a
   * search engine it runs): results best first, or `null` to let the
   * resolver use its built-in index. The resolver drops the target's own
   * session, cuts at the limit and computes the mentions.
   */
  search?(request: SessionSearchRequest): MaybePromise<readonly HostSearchResult[] | null | undefined>
}

/** Which sessions `search` looks at: all, or only those in the target's cwd. */
export type SessionSearchScope = 'all' | 'cwd'

/** What a host's own `search` is asked. */
export interface SessionSearchRequest {
  /** The session searching (never return its own session). */
  target: { id: string; cwd: string | null }
  /** The text as the user typed it. */
  query: string
  /** At most this many results are used. */
  limit: number
  /** Which sessions to search. */
  scope: SessionSearchScope
}

/** Where a search result's best hit is. */
export type SessionSearchField = 'title' | 'message' | 'id' | 'cwd'

/** One result of a host's own `search`. */
export interface HostSearchResult {
  /** The session id. */
  sessionId: string
  /** Creation time. */
  createdAt: number
  /** The label; defaults to the id. */
  label?: string
  /** The session's cwd. */
  cwd?: string | null
  /** Text around the hit; defaults to `''`. */
  snippet?: string
  /** Where the hit is; defaults to `'message'`. */
  field?: SessionSearchField
  /** For a hit in a message: its index among the projected messages. */
  messageIndex?: number | null
}

/** Options of `search`. */
export interface SessionSearchOptions extends CallOptions {
  /** At most this many results: a positive safe integer, default `candidateLimit`. */
  limit?: number | null
  /** Which sessions to search, default `'all'`. */
  scope?: SessionSearchScope | null
}

/** A session found by `search`. */
export interface SessionSearchResult extends SessionCandidateWithMention {
  /** A short text around the best hit (whitespace runs collapsed, `…` where cut). */
  snippet: string
  /** Where the best hit is. */
  field: SessionSearchField
  /** For a hit in a message: its index among the projected messages; else `null`. */
  messageIndex: number | null
}

/** Configuration; an absent or `null` key takes its default. */
export interface SessionReferenceConfig {
  /** Distinct references allowed per message: 1–3, default 3. */
  maxReferences?: number | null
  /** Candidates returned by `candidates()`: a positive safe integer, default 50. */
  candidateLimit?: number | null
  /** The per-source byte budget of a rendered snapshot, default 65,536. */
  maxReferenceBytes?: number | null
  /**
   * The hardened preset (docs/security.md): turns `redactSecrets`,
   * `escapeInvisible` and `sanitizeLabels` on; each of them given
   * explicitly (`false` too) wins over it. Default `false`.
   */
  hardened?: boolean | null
  /**
   * Replace credentials (AWS key ids, GitHub, OpenAI, Anthropic, Slack,
   * Google, Stripe, GitLab and npm tokens, PEM private keys, JSON web
   * tokens) in the snapshot's texts and in labels by `[redacted <kind>]`
   * before the budget is applied; each reference's metadata then has
   * `redactedSecrets`. Default `false`.
   */
  redactSecrets?: boolean | null
  /**
   * Write invisible, bidirectional, tag and other format characters (and
   * fullwidth look-alikes of `<` `>`) as `\uXXXX` escapes in the snapshot's
   * JSON, so that a reviewer sees them; lossless. Default `false`.
   */
  escapeInvisible?: boolean | null
  /**
   * Drop control, format, tag and bidirectional characters from labels
   * (in the rewritten user text, the snapshot, the metadata and candidates)
   * and cut them to 100 characters. Mentions keep the exact id. Default `false`.
   */
  sanitizeLabels?: boolean | null
  /**
   * Which DSH release's output to reproduce: `'0.1.1'` (the default) or
   * `'0.1.5'` / `'0.1.7'`, which add `capturedFormatVersion` to the metadata,
   * a `## Reference omissions` section after a truncated prompt, the
   * candidates' `sameWorkspace` (and `displayTitle` in `'0.1.7'`), and,
   * without `maxReferenceBytes`, a budget from `PrepareOptions.contextWindow`.
   */
  dshCompat?: '0.1.1' | '0.1.5' | '0.1.7' | null
  /** The share of the model's context the automatic budget takes: 0 to 1, default 0.2. */
  referenceContextFraction?: number | null
}

/** A run of messages by index: `start` to `end - 1` (`end` exclusive; without it, through the last message). */
export interface SessionMessageRange {
  /** The index of the first message. */
  start: number
  /** One past the index of the last message; absent or `null`: through the last. */
  end?: number | null
}

/** A structured reference to another session. */
export interface SessionReferenceInput {
  /** The referenced session's id. */
  sessionId: string
  /** The label shown for the source; defaults to the id. */
  label?: string
  /**
   * Carry only this run of the session's messages, under the same budget
   * (the oldest of the run are dropped first). Not with `around`.
   */
  range?: SessionMessageRange | null
  /**
   * Carry the message at this index and the messages around it, as many
   * whole messages as the budget holds (that one cut when it alone does not
   * fit). Not with `range`.
   */
  around?: number | null
}

/** Options of every asynchronous call. */
export interface CallOptions {
  /** Aborting it (also before the call) rejects with `SESSION_REFERENCE_CANCELLED`. */
  signal?: AbortSignal | null
}

/** Options of `prepare`. */
export interface PrepareOptions extends CallOptions {
  /**
   * The model's context window in tokens: under the later `dshCompat`
   * profiles without `maxReferenceBytes`, each source's budget is
   * `max(65536, floor(contextWindow × 4 × referenceContextFraction))`.
   */
  contextWindow?: number | null
}

/** Retention statistics of one referenced session. */
export interface SessionReferenceMetadata {
  /** The referenced session's id. */
  sessionId: string
  /** Its label (the id when none was given). */
  label: string
  /** The snapshot's `capturedThroughSeq`. */
  capturedThroughSeq: number | null
  /** The projection contained a compaction checkpoint. */
  compacted: boolean
  /** Projected conversation items before retention. */
  originalMessages: number
  /** Items kept (possibly shortened). */
  retainedMessages: number
  /** Items dropped whole. */
  omittedMessages: number
  /** UTF-8 bytes of dropped items plus bytes cut from shortened ones. */
  omittedBytes: number
  /** `omittedMessages > 0 || omittedBytes > 0`. */
  truncated: boolean
  /** Position among the distinct references. */
  inputIndex: number
  /**
   * For a reference with `range` or `around`: the run its snapshot was taken
   * from, clamped to the conversation (`start === end` past its end).
   */
  range?: { start: number; end: number }
  /** For a reference with `around`: the index it was centred on. */
  around?: number
  /**
   * Credentials redacted from the retained texts of this source: present
   * only when `redactSecrets` is on (see `REDACTED_SECRETS_KEY`).
   */
  redactedSecrets?: number
}

/** The `source` of a context message. */
export interface SessionReferenceSource {
  kind: 'session-reference'
  form: 'recall'
  version: 1
  /** One entry per distinct reference, in first-mention order. */
  references: SessionReferenceMetadata[]
}

/** The context message that carries the referenced sessions to the model. */
export interface SessionReferenceContextMessage {
  /** Retention metadata of every referenced session. */
  source: SessionReferenceSource
  /** One text block: the fixed header and the tag-safe JSON of the sources. */
  content: [{ type: 'text'; text: string }]
  role: 'user'
  /** A fresh UUID. */
  id: string
}

/** The result of `prepare`: a copy of the content, plus the context message when there were references. */
export interface PreparedReferencedMessage<Content extends JsonValue = JsonValue> {
  /** A copy of the caller's content. */
  content: Content
  /** The context message; absent when there were no references. */
  additionalContext?: SessionReferenceContextMessage
}

/** A message as `prepareMessages` reads it; only `source.kind === 'user'` messages are rewritten. */
export interface ConversationMessage {
  /** Content blocks; `text` blocks of user messages are parsed for mentions. */
  content?: JsonValue
  /** `{kind: 'user'}` marks a message whose mentions are resolved. */
  source?: JsonValue
  [key: string]: JsonValue | undefined
}

/** Options of `read`: at most one of `start`, `around` and `cursor`; with none, the newest messages that fit. */
export interface SessionReadOptions extends CallOptions {
  /** Read forward from this message index. */
  start?: number | null
  /** Read this message index and the messages on both sides of it. */
  around?: number | null
  /** Continue from a page's `nextCursor` or `prevCursor`. */
  cursor?: string | null
  /** The budget: UTF-8 bytes of the framed `text`; default 16384. */
  maxBytes?: number | null
  /** A budget in tokens as well, counted as at most one token per UTF-8 byte. */
  maxTokens?: number | null
}

/** One message of a page. */
export interface SessionPageMessage {
  /** Its index among the session's projected messages (a search result's `messageIndex`). */
  index: number
  role: 'user' | 'assistant'
  /** Its text; cut head/tail with an omission notice when it alone exceeded the budget. */
  text: string
  /** A compaction checkpoint (a summary of what came before). */
  checkpoint: boolean
  /** Present when the text was cut: the UTF-8 bytes left out. */
  omittedBytes?: number
}

/** One page of a session's projected conversation (`read`). */
export interface SessionPage {
  /** The session id. */
  sessionId: string
  /** Its latest title, or its id. */
  label: string
  /** The session's working directory; absent when it has none. */
  cwd?: string
  /** Projected messages in the whole session. */
  totalMessages: number
  /** The last event the snapshot covers. */
  capturedThroughSeq: number | null
  /** The page's messages, consecutive, oldest first. */
  messages: SessionPageMessage[]
  /** Continues after the page; absent at the end. */
  nextCursor?: string
  /** Continues before the page; absent at the start. */
  prevCursor?: string
  /** Present when `redactSecrets` is on: credentials redacted from the page. */
  redactedSecrets?: number
  /**
   * The framed text for a model: an untrusted-background warning around the
   * page as one line of tag-safe JSON; at most the budget in UTF-8 bytes.
   */
  text: string
}

/** A discovery result of `listCandidates`. */
export interface SessionCandidate {
  /** The session id. */
  sessionId: string
  /** The latest title, or the id. */
  label: string
  /** Present only when the session has a cwd. */
  cwd?: string
  /** Creation time, as the session listing gave it. */
  createdAt: number
}

/** A discovery result of `candidates`, with its ready-to-insert mention. */
export interface SessionCandidateWithMention extends SessionCandidate {
  /** `@[label](dsh-session:…)`. */
  mention: string
}

/** A mention parsed out of a text. */
export interface ParsedSessionReference {
  /** The decoded session id. */
  sessionId: string
  /** The label that replaced the mention (the id for a bare URI). */
  label: string
}

/** The result of `parseSessionReferenceText`. */
export interface ParsedSessionReferenceText {
  /** The text with every mention replaced by `@` + its label. */
  text: string
  /** The references in order of appearance, duplicates kept. */
  references: ParsedSessionReference[]
}

/**
 * A read-only DSH sessions root (`<root>/<project>/<session>/session.jsonl`,
 * or `session.v<N>.jsonl` of later DSH releases, plain or `.zstd`; each
 * session's newest generation is read). Pass it to `SessionReferenceResolver` as the query: the
 * resolver then reads it natively, without calling into JavaScript.
 */
export declare class DshSessionStore implements SessionQuery {
  private constructor()
  /**
   * Opens a sessions root. Throws an `Error` whose `code` is `'ENOENT'`,
   * `'ENOTDIR'`, `'EACCES'` or `'EIO'` when it is not a readable directory.
   */
  static open(root: string): DshSessionStore
  /** The root directory. */
  readonly root: string
  /** The readable sessions' headers, newest first. */
  listSessions(): Promise<SessionHeader[]>
  /** The latest title of a session, or `null`; rejects with `SESSION_REFERENCE_READ_FAILED`. */
  readTitle(sessionId: string): Promise<string | null>
  /** The surface snapshot of a session; rejects with `SESSION_REFERENCE_READ_FAILED`. */
  readSurface(sessionId: string): Promise<SurfaceSnapshot>
}

/** Opens a DSH sessions root (same as `DshSessionStore.open`). */
export declare function openDshSessionStore(root: string): DshSessionStore

/**
 * A format `SessionSources.open` reads (the core's `SourceKind` names; an
 * unknown kind's error lists them). `aider` has no default location.
 */
export type SessionSourceKind =
  | 'dsh'
  | 'claude-code'
  | 'codex'
  | 'copilot-cli'
  | 'gemini-cli'
  | 'cursor'
  | 'aider'
  | 'opencode'
  | 'kilo'
  | 'cline'
  | 'roo-code'
  | 'pi'
  | 'qwen-code'
  | 'continue'
  | 'kimi'
  | 'grok'
  | 'goose'
  | 'crush'
  | 'zed'
  | 'hermes'
  | 'warp'
  | 'openhands'

/** One source for `SessionSources.open`: a format and its root (default location when omitted). */
export interface SessionSourceSpec {
  kind: SessionSourceKind
  root?: string | null
}

/**
 * How one source fared in the last listing of a `SessionSources`. `note`,
 * when present, says how its root was taken (a root given one level off) or
 * why it listed no session (what its root holds).
 */
/** A session of a source that could not be read (title or text), and why. */
export interface UnreadableSession {
  sessionId: string
  why: string
}

/**
 * How a source fared in the last listing; `unreadable` (the first three)
 * and `unreadableCount` when sessions of it could not be read since.
 */
export type SessionSourceStatus =
  | { name: string; sessions: number; note?: string; unreadable?: UnreadableSession[]; unreadableCount?: number }
  | { name: string; error: string; note?: string; unreadable?: UnreadableSession[]; unreadableCount?: number }

/**
 * The sessions that DSH and other agents keep on disk, read-only, as one
 * session query: listed together (newest first) and read by id
 * (`<kind>:<id>` such as `claude-code:<uuid>`; DSH ids unchanged). Pass it to
 * `SessionReferenceResolver`: the resolver then reads it natively.
 */
export declare class SessionSources implements SessionQuery {
  private constructor()
  /**
   * Opens `sources`: `null` or omitted for every default location that
   * exists (`~/.dsh/sessions`, `~/.claude/projects` or
   * `$CLAUDE_CONFIG_DIR/projects`, `$CODEX_HOME` or `~/.codex`), else at most
   * one spec per kind. Throws `SESSION_REFERENCE_INVALID_CONFIG` for a bad
   * list; a root that cannot be opened is reported by `lastReport()`.
   */
  static open(sources?: readonly SessionSourceSpec[] | null): SessionSources
  /** The sources opened. */
  readonly sources: Array<{ kind: SessionSourceSpec['kind']; root: string }>
  /** How each source fared in the last `listSessions`. */
  lastReport(): SessionSourceStatus[]
  /** Every source's session headers, newest first; rejects only when every source fails. */
  listSessions(): Promise<SessionHeader[]>
  /** The title of a session, or `null`; rejects with `SESSION_REFERENCE_READ_FAILED`. */
  readTitle(sessionId: string): Promise<string | null>
  /** The surface snapshot of a session; rejects with `SESSION_REFERENCE_READ_FAILED`. */
  readSurface(sessionId: string): Promise<SurfaceSnapshot>
}

/** Opens several agents' sessions (same as `SessionSources.open`). */
export declare function openSessionSources(sources?: readonly SessionSourceSpec[] | null): SessionSources

/**
 * Prepares bounded, tag-safe snapshots of other sessions for a new message,
 * reading through a host's session query. Every method returns a Promise,
 * runs on the library's own threads (never the libuv pool) and leaves the
 * event loop free.
 */
export declare class SessionReferenceResolver {
  /**
   * @param query the host's session query, a `DshSessionStore` or a `SessionSources`
   * @param config limits; throws `SESSION_REFERENCE_INVALID_CONFIG` when invalid
   */
  constructor(query: SessionQuery | DshSessionStore | SessionSources, config?: SessionReferenceConfig | null)

  /**
   * Prepares one message: validates and de-duplicates `references`, reads
   * every source in parallel, keeps each within the byte budget, and
   * resolves to a copy of `content` plus the context message. All or
   * nothing: rejects with a `SessionReferenceError`.
   */
  prepare<Content extends JsonValue>(
    target: SessionTarget,
    content: Content,
    references: readonly SessionReferenceInput[],
    options?: PrepareOptions,
  ): Promise<PreparedReferencedMessage<Content>>

  /**
   * The pre-step rewrite: mentions in the text blocks of user messages
   * become `@label`, and each message with references is followed by its
   * context message. Other messages pass through unchanged.
   */
  prepareMessages<Message extends ConversationMessage>(
    target: SessionTarget,
    messages: readonly Message[],
    options?: CallOptions,
  ): Promise<Array<Message | SessionReferenceContextMessage>>

  /**
   * Discovery: sessions other than the target, same cwd first, then those
   * without a cwd, then the rest; filtered case-insensitively by id, cwd or
   * title when `query` is not empty; at most `limit` (default: the
   * configured `candidateLimit`; anything but a positive safe integer
   * rejects with `SESSION_REFERENCE_INVALID_REFERENCE`).
   */
  listCandidates(
    target: SessionTarget,
    query?: string,
    limit?: number,
    options?: CallOptions,
  ): Promise<SessionCandidate[]>

  /**
   * `listCandidates`, each candidate with its mention: at most `limit`
   * (default: `candidateLimit`; an explicit limit must be a positive safe
   * integer, else `SESSION_REFERENCE_INVALID_REFERENCE`).
   */
  candidates(
    target: SessionTarget,
    query?: string,
    limit?: number,
    options?: CallOptions,
  ): Promise<SessionCandidateWithMention[]>
  /** `candidates(target, query, undefined, options)`. */
  candidates(target: SessionTarget, query: string, options: CallOptions): Promise<SessionCandidateWithMention[]>

  /**
   * Full-text search over the projected text of every session but the
   * target's (user and assistant messages and checkpoints; never tool
   * output or reasoning), plus titles, ids and cwds. Case-insensitive
   * substrings, so CJK text and identifier fragments (`1137` in `PR1137`)
   * match; every whitespace-separated word must occur. Best first: the
   * whole query in the title, every word in the title, the whole query in a
   * message, id or cwd, every word in one message, then the words apart by
   * relevance (how often the messages hold them, for their length); ties
   * go to the target's cwd, then newer sessions. One result per
   * session with a snippet around its best hit. A blank query finds
   * nothing. A host's own `search` answers instead of the built-in index,
   * which is kept per session under the host's `fingerprints`.
   */
  search(target: SessionTarget, query: string, options?: SessionSearchOptions): Promise<SessionSearchResult[]>

  /**
   * One page of another session's projected conversation (user and
   * assistant text and checkpoints; never tool output or reasoning): whole
   * messages whose framed `text` fits the budget, read forward from
   * `start`, around an index, from a cursor, or the newest that fit. A
   * cursor of a session that changed since rejects with
   * `SESSION_REFERENCE_SESSION_CHANGED`; the target's own session with
   * `SESSION_REFERENCE_SELF_REFERENCE`; a bad option or cursor with
   * `SESSION_REFERENCE_INVALID_REFERENCE`.
   */
  read(target: SessionTarget, sessionId: string, options?: SessionReadOptions): Promise<SessionPage>
}

/** `dsh-session:` + the unpadded base64url of the id's JSON string literal. */
export declare function encodeSessionReferenceUri(sessionId: string): string

/** The id of a canonical session URI; throws `SESSION_REFERENCE_INVALID_REFERENCE` for anything else. */
export declare function decodeSessionReferenceUri(uri: string): string

/** `@[label](uri)` with every `\` and `]` of the label escaped; the label defaults to the id. */
export declare function formatSessionReferenceMention(reference: SessionReferenceInput): string

/**
 * Replaces every `@[label](dsh-session:…)` mention and bare `dsh-session:`
 * URI by `@` + its label. A recognised token whose URI does not decode
 * throws `SESSION_REFERENCE_INVALID_REFERENCE`.
 */
export declare function parseSessionReferenceText(text: string): ParsedSessionReferenceText

/** `JSON.stringify(value)` with every `<` written as `\u003c`: safe inside a tag. */
export declare function stringifyTagSafeJson(value: JsonValue): string

/** One item of a pre-projected conversation. */
export interface ConversationItem {
  role: 'user' | 'assistant'
  text: string
  /** A compaction summary, which retention keeps while it drops older messages. */
  checkpoint?: true
}

/** A pre-projected surface snapshot, which `readSurface` may return instead of DSH events. */
export interface ConversationSnapshot {
  session: { id: string; cwd: string | null }
  capturedThroughSeq: number | null
  conversation: ConversationItem[]
}

/** Options of `conversationSnapshot`. */
export interface ConversationSnapshotOptions {
  /** `'openai'` (Chat Completions or Responses messages, the default) or `'anthropic'`. */
  format?: 'openai' | 'anthropic'
  /** The session's working directory. */
  cwd?: string | null
  /** How far into its history the host read; default: the index of the last message. */
  capturedThroughSeq?: number | null
}

/**
 * A pre-projected snapshot of a host's own message list, to return from
 * `readSurface`: only user and assistant text is kept (never system,
 * developer or tool messages, tool calls, thinking or tool results).
 * Messages of the wrong shape throw a `TypeError` with code `ERR_INVALID_ARG_TYPE`.
 */
export declare function conversationSnapshot(
  sessionId: string,
  messages: JsonValue[],
  options?: ConversationSnapshotOptions,
): ConversationSnapshot

/** The URI scheme, with its colon. */
export declare const SESSION_REFERENCE_SCHEME: 'dsh-session:'
/** The hard maximum (and default) number of distinct references per message. */
export declare const MAX_REFERENCES: 3
/** The default number of discovery candidates. */
export declare const DEFAULT_CANDIDATE_LIMIT: 50
/** The default per-source byte budget. */
export declare const DEFAULT_MAX_REFERENCE_BYTES: 65536
/** The hardened preset as a configuration: `{ hardened: true }` (frozen); spread it into your own. */
export declare const HARDENED_CONFIG: Readonly<{ hardened: true }>
/** The metadata key that counts redacted credentials: `'redactedSecrets'`. */
export declare const REDACTED_SECRETS_KEY: 'redactedSecrets'
