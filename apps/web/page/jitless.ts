/**
 * Zod (inside the AI SDK) tests once, when its first object schema is made, whether it may compile
 * validators with `new Function`; under the page's Content-Security-Policy (no `'unsafe-eval'`)
 * that test is refused, and Chromium logs the refusal as a console error on every load. Zod reads
 * `jitless` (its `z.config`) from this global object before it tries: set, the test never runs,
 * and validation is the same. main.tsx imports this module first, so it runs before zod loads
 * (and names the export: the package is `sideEffects: false`, so an import for its effect alone
 * would be dropped from the bundle).
 */
const holder = globalThis as { __zod_globalConfig?: Record<string, unknown> }
holder.__zod_globalConfig = Object.assign(holder.__zod_globalConfig ?? {}, { jitless: true })

export const VALIDATES_WITHOUT_EVAL = holder.__zod_globalConfig.jitless === true
