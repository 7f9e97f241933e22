// Types of the ES module entry (`wrapper.mjs`): the same API as `wrapper.d.ts`.
export * from './wrapper.js'
