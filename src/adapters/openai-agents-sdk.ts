/**
 * The OpenAI Agents SDK (`@openai/agents-core`, an optional peer) as the adapter and its stock
 * driver use it, loaded when `xstate-plan-mode/openai-agents` (or `/testing/openai-agents`) is
 * imported, with `import()`: the host's own copy, the one its `run` and `RunState` come from
 * (R170). The CommonJS build loads it with `require` instead (`openai-agents-sdk.cjs.ts`, which
 * the build puts in this module's place).
 *
 * @throws (the import rejects) Error `` xstate-plan-mode/openai-agents needs the `@openai/agents-core`
 *   package (npm install @openai/agents-core@0.14) ``, `code` `MODULE_NOT_FOUND`, when it is not installed.
 */
import type * as Sdk from '@openai/agents-core'
import { missingSdk } from './openai-agents-peer.js'

export const sdk: typeof Sdk = await import('@openai/agents-core').catch((error: unknown) => {
  throw missingSdk(error)
})
