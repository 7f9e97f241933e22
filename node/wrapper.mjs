// ES module entry of `dsh-session-reference`: the same objects as the
// CommonJS entry (`wrapper.js`), so `instanceof` works across both.
import cjs from './wrapper.js'

export const {
  SessionReferenceResolver,
  SessionReferenceError,
  DshSessionStore,
  openDshSessionStore,
  SessionSources,
  openSessionSources,
  encodeSessionReferenceUri,
  decodeSessionReferenceUri,
  formatSessionReferenceMention,
  parseSessionReferenceText,
  stringifyTagSafeJson,
  conversationSnapshot,
  SESSION_REFERENCE_SCHEME,
  MAX_REFERENCES,
  DEFAULT_CANDIDATE_LIMIT,
  DEFAULT_MAX_REFERENCE_BYTES,
  HARDENED_CONFIG,
  REDACTED_SECRETS_KEY,
} = cjs
