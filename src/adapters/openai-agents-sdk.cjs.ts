/**
 * The CommonJS build's `openai-agents-sdk.ts` (the build puts it in that module's place): the
 * OpenAI Agents SDK loaded with `require`, the host's own copy (R170).
 *
 * @throws Error `` xstate-plan-mode/openai-agents needs the `@openai/agents-core` package (npm
 *   install @openai/agents-core@0.14) ``, `code` `MODULE_NOT_FOUND`, when it is not installed.
 */
import type * as Sdk from '@openai/agents-core'
import { missingSdk } from './openai-agents-peer.js'

function load(): typeof Sdk {
  try {
    return require('@openai/agents-core') as typeof Sdk
  } catch (error) {
    throw missingSdk(error)
  }
}

export const sdk: typeof Sdk = load()
