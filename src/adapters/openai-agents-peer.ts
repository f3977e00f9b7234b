/** The optional peer of `xstate-plan-mode/openai-agents`, and what installs it (R170). */
export const OPENAI_AGENTS_PEER = { name: '@openai/agents-core', install: '@openai/agents-core@0.14' } as const

/**
 * The error a failed load of the SDK becomes: when the SDK itself is not installed, an `Error`
 * naming the package to install, `code` `MODULE_NOT_FOUND` (R170, as R110 and R148 for the other
 * peers); any other failure (one of the SDK's own dependencies missing, an error in it) as it is.
 */
export function missingSdk(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code
  const { name, install } = OPENAI_AGENTS_PEER
  if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && String((error as Error).message).includes(`'${name}'`)) {
    return Object.assign(new Error(`xstate-plan-mode/openai-agents needs the \`${name}\` package (npm install ${install})`), { code: 'MODULE_NOT_FOUND' })
  }
  return error
}
