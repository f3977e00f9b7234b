/**
 * The demo's offline model: an AI SDK `MockLanguageModelV3` (from `ai/test`, part of the `ai`
 * package) that answers request n with reply n of a script. It reports every request it gets,
 * so the demo can print what the model was told.
 */
import { MockLanguageModelV3 } from 'ai/test'

type CallOptions = MockLanguageModelV3['doGenerateCalls'][number]
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>
type Content = GenerateResult['content'][number]

/** One scripted reply: some text and/or tool calls (the step then ends on `tool-calls`). */
export interface ScriptedReply {
  text?: string
  toolCalls?: { name: string; input: unknown }[]
}

/** What one request carried, read from the provider-level prompt. */
export interface ModelRequest {
  /** The system prompt, or undefined when the request had none. */
  system: string | undefined
  /** The texts of the user messages that were not in the previous request. */
  newUserTexts: string[]
}

const USAGE: GenerateResult['usage'] = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
}

/**
 * A model answering request n with `script[n]` (`{ text: 'Done.' }` once the script runs out).
 * `onRequest` sees each request before the reply is made, and the reply after.
 */
export function scriptedModel<R extends ScriptedReply>(
  script: readonly R[],
  onRequest: (request: ModelRequest, reply: R | ScriptedReply) => void,
): MockLanguageModelV3 {
  let index = 0
  let seenUserMessages = new Set<unknown>()
  return new MockLanguageModelV3({
    doGenerate: async (options: CallOptions) => {
      const i = index++
      const reply: R | ScriptedReply = script[i] ?? { text: 'Done.' }
      const system = options.prompt.filter((m) => m.role === 'system').map((m) => m.content)
      // The SDK rebuilds the prompt per request; a user message is new when its text and place
      // were not in the previous request.
      const keys = new Set<unknown>()
      const newUserTexts: string[] = []
      options.prompt.forEach((message, at) => {
        if (message.role !== 'user') return
        for (const part of message.content) {
          if (part.type !== 'text') continue
          const key = `${at}:${part.text}`
          keys.add(key)
          if (!seenUserMessages.has(key)) newUserTexts.push(part.text)
        }
      })
      seenUserMessages = keys
      onRequest({ system: system.length === 0 ? undefined : system.join('\n'), newUserTexts }, reply)
      const content: Content[] = []
      if (reply.text !== undefined) content.push({ type: 'text', text: reply.text })
      reply.toolCalls?.forEach((call, k) =>
        content.push({ type: 'tool-call', toolCallId: `call-${i}-${k}`, toolName: call.name, input: JSON.stringify(call.input) }),
      )
      const finishReason: GenerateResult['finishReason'] = reply.toolCalls?.length
        ? { unified: 'tool-calls', raw: 'tool_calls' }
        : { unified: 'stop', raw: 'stop' }
      return { content, finishReason, usage: USAGE, warnings: [] }
    },
  })
}
