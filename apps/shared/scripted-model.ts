/**
 * The CLI's offline models: AI SDK `MockLanguageModelV3`s (from `ai/test`, part of the `ai`
 * package) whose replies are decided in-process. `respondingModel` serves a reply function for
 * both `generateText` and `streamText`; the demo's `scriptedModel` answers request n with reply n
 * of a script and reports every request it gets, so the demo can print what the model was told.
 */
import { simulateReadableStream } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'

/** The provider-level options of one request (its `prompt`, `tools`, `abortSignal`). */
export type ModelCallOptions = MockLanguageModelV3['doGenerateCalls'][number]
type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>
type StreamResult = Awaited<ReturnType<MockLanguageModelV3['doStream']>>
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never
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

/** Options of {@link respondingModel}. */
export interface RespondingModelOptions {
  /** Pause between streamed chunks, in ms (default 0), so that a terminal shows the stream. */
  chunkDelayMs?: number
  /** Pause before a streamed reply starts, in ms (default `chunkDelayMs`): a model's think time. */
  replyDelayMs?: number
  /** The model id the SDK reports (default `scripted`). */
  modelId?: string
}

const USAGE: GenerateResult['usage'] = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
}

/** Words per streamed text chunk: a stream that reads as one, without a chunk per letter. */
const WORDS_PER_CHUNK = 4

/**
 * A model whose reply to request n is `respond(options, n)`, for `generateText` and `streamText`
 * alike. Streamed text arrives a few words at a time; a streamed reply stops early when the
 * request's abort signal fires, as a provider's would.
 */
export function respondingModel(
  respond: (options: ModelCallOptions, index: number) => ScriptedReply,
  { chunkDelayMs = 0, replyDelayMs = chunkDelayMs, modelId = 'scripted' }: RespondingModelOptions = {},
): MockLanguageModelV3 {
  let index = 0
  return new MockLanguageModelV3({
    modelId,
    doGenerate: async (options: ModelCallOptions) => {
      const i = index++
      const reply = respond(options, i)
      return { content: replyContent(reply, i), finishReason: finishReasonOf(reply), usage: USAGE, warnings: [] }
    },
    doStream: async (options: ModelCallOptions) => {
      const i = index++
      const reply = respond(options, i)
      const chunks: StreamPart[] = [{ type: 'stream-start', warnings: [] }]
      for (const part of replyContent(reply, i)) {
        if (part.type === 'text') {
          const id = `text-${i}`
          chunks.push({ type: 'text-start', id })
          for (const delta of textChunks(part.text)) chunks.push({ type: 'text-delta', id, delta })
          chunks.push({ type: 'text-end', id })
        } else {
          chunks.push(part as StreamPart)
        }
      }
      chunks.push({ type: 'finish', finishReason: finishReasonOf(reply), usage: USAGE })
      const stream = simulateReadableStream({ chunks, initialDelayInMs: replyDelayMs, chunkDelayInMs: chunkDelayMs })
      return { stream: options.abortSignal ? stopOnAbort(stream, options.abortSignal) : stream }
    },
  })
}

/**
 * A model answering request n with `script[n]` (`{ text: 'Done.' }` once the script runs out).
 * `onRequest` sees each request before the reply is made, and the reply after.
 */
export function scriptedModel<R extends ScriptedReply>(
  script: readonly R[],
  onRequest: (request: ModelRequest, reply: R | ScriptedReply) => void,
): MockLanguageModelV3 {
  let seenUserMessages = new Set<unknown>()
  return respondingModel((options, i) => {
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
    return reply
  })
}

/**
 * A reply as the provider's content. Tool call ids are unique across models and processes, as a
 * provider's are: a chat continued by another instance (or after a restart) holds the calls of
 * earlier requests, and an approval is matched to its call by id (R82).
 */
function replyContent(reply: ScriptedReply, i: number): Content[] {
  const content: Content[] = []
  if (reply.text !== undefined) content.push({ type: 'text', text: reply.text })
  reply.toolCalls?.forEach((call, k) =>
    content.push({ type: 'tool-call', toolCallId: `call-${i}-${k}-${crypto.randomUUID().slice(0, 8)}`, toolName: call.name, input: JSON.stringify(call.input) }),
  )
  return content
}

function finishReasonOf(reply: ScriptedReply): GenerateResult['finishReason'] {
  return reply.toolCalls?.length ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' }
}

/** `text` in chunks of a few words, each chunk keeping its trailing whitespace. */
function textChunks(text: string): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? []
  const chunks: string[] = []
  for (let i = 0; i < words.length; i += WORDS_PER_CHUNK) chunks.push(words.slice(i, i + WORDS_PER_CHUNK).join(''))
  return chunks
}

/** Ends `stream` with the abort reason once `signal` aborts, as a provider's fetch would. */
function stopOnAbort<T>(stream: ReadableStream<T>, signal: AbortSignal): ReadableStream<T> {
  const reader = stream.getReader()
  return new ReadableStream<T>({
    async pull(controller) {
      if (signal.aborted) return controller.error(signal.reason)
      const next = await reader.read()
      if (next.done) controller.close()
      else controller.enqueue(next.value)
    },
    cancel: (reason) => reader.cancel(reason),
  })
}
