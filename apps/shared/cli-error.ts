/**
 * Bad input: `main` prints its message as one line on stderr and returns exit code 2. Here, not in
 * `apps/cli/io.ts`, because the chat model's choice (`chat-model.ts`) throws it for the CLI's `chat`
 * and the web chat's start alike; `apps/cli/io.ts` re-exports it.
 */
export class CliError extends Error {
  override readonly name = 'CliError'
}
