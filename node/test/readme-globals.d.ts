// For tsc only (tsconfig.readme.json): the one Node global the README's
// examples use, without pulling in @types/node.
declare const process: { env: Record<string, string | undefined> }
