/**
 * `xstate-plan-mode/testing/ai-sdk`: the stock conformance drivers of the AI SDK adapter
 * (`withPlanMode`), for `ai` 6 (a peer, as for `xstate-plan-mode/ai-sdk`). Every stock driver of
 * the package is a `xstate-plan-mode/testing/<framework>` entry exporting `conformanceSuites`: the
 * suites' options for the framework's adapter, to hand to the runner's wrappers; the scenarios
 * and their wrappers import no framework.
 *
 * ```ts
 * import { defineConformanceSuite, defineDurableReviewSuite } from 'xstate-plan-mode/testing'
 * import { conformanceSuites } from 'xstate-plan-mode/testing/ai-sdk'
 *
 * const suites = conformanceSuites({ section: MY_SECTION, system: MY_SYSTEM })
 * defineConformanceSuite(suites.channel)
 * defineDurableReviewSuite(suites.durable)
 * ```
 *
 * @module xstate-plan-mode/testing/ai-sdk
 */
import { generateText, stepCountIs, type LanguageModel, type ModelMessage, type UIMessage } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { withPlanMode, type PlanModeAiSdk, type WithPlanModeOptions } from '../adapters/ai-sdk.js'
import { createMemorySessionLog } from '../adapters/memory.js'
import { createPlanMode, type PlanMode } from '../service.js'
import type { PlanAgent, ReviewAnswer, ReviewChannel, SessionLog, UserMessage } from '../types.js'
import type {
  ConformanceAgent,
  ConformanceReview,
  ConformanceSuiteOptions,
  DurableConformanceAgent,
  DurableReviewSuiteOptions,
  StockConformanceSuites,
} from './scenarios.js'
import { createReviewQueue } from './review-queue.js'

/** Options of `conformanceSuites`: the host's own settings of `createPlanMode` and `withPlanMode`. */
export interface AiSdkConformanceOptions {
  /** The section the host gives `createPlanMode` (R18). */
  section: string
  /** The host's base system prompt (`withPlanMode`'s `system`): the driver reads the section after it. */
  system?: string
  /** `createPlanMode`'s `decisions` (R101). Default `'approve-or-keep'`. */
  decisions?: 'approve-or-keep' | 'all'
  /** A new, empty session log for each scenario's agent (the host's own store). Default: a memory log. */
  createLog?: () => SessionLog | Promise<SessionLog>
  /** The suites' names. Default `'AI SDK withPlanMode'`. */
  name?: string
}

/** What one request to the model carried: the system prompt and the user texts. */
interface SeenRequest {
  system: string | undefined
  userTexts: string[]
}

/** A model that answers every request with a short text and records what each request carried. */
function recordingModel(): { model: LanguageModel; requests: SeenRequest[] } {
  const requests: SeenRequest[] = []
  const model = new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const system = prompt.filter((message) => message.role === 'system').map((message) => message.content)
      const userTexts = prompt.flatMap((message) =>
        message.role === 'user' ? message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])) : [],
      )
      requests.push({ system: system.length === 0 ? undefined : system.join('\n'), userTexts })
      return {
        content: [{ type: 'text', text: 'Noted.' }],
        finishReason: { unified: 'stop', raw: undefined },
        usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
        warnings: [],
      }
    },
  })
  return { model, requests }
}

/** The user texts of model messages. */
function userTexts(messages: readonly ModelMessage[]): string[] {
  return messages.flatMap((message) => {
    if (message.role !== 'user') return []
    if (typeof message.content === 'string') return [message.content]
    return message.content.flatMap((part) => (part.type === 'text' ? [part.text] : []))
  })
}

/** One process of the host: a service, `withPlanMode` over it, the model, the history of the conversation. */
function hostProcess(options: AiSdkConformanceOptions, log: SessionLog, review: ReviewChannel | 'durable') {
  const { section, system, decisions = 'approve-or-keep' } = options
  const planMode: PlanMode = createPlanMode({ section, review, decisions, logger: { warn: () => {} } })
  const steered: UserMessage[] = []
  const agent: PlanAgent = {
    id: 'agent-1',
    session: log,
    steer: (message) => {
      steered.push(message)
      plan.steer(message)
    },
  }
  // Mutable on purpose: the adapter reads `abortSignal` at each step boundary.
  const settings: WithPlanModeOptions = { planMode, agent, ...(system === undefined ? {} : { system }) }
  const plan: PlanModeAiSdk = withPlanMode(settings)
  const { model, requests } = recordingModel()
  const history: ModelMessage[] = [{ role: 'user', content: 'Import the CSV files.' }]
  let commands = 0

  /** The section as the model received it: the system prompt after the host's own. */
  const sectionOf = (sent: string | undefined): string => {
    if (sent === undefined || sent === system) return ''
    return system === undefined ? sent : sent.slice(system.length + 2)
  }

  const basics: Omit<ConformanceAgent, 'callExitTool' | 'nextReview' | 'restart'> = {
    events: () => log.events,
    startTurn: () => plan.startTurn(),
    endTurn: () => plan.endTurn(),
    async step(options = {}) {
      history.push(...plan.takeSteered())
      const known = userTexts(history).length
      const before = requests.length
      if (options.signal) settings.abortSignal = options.signal
      try {
        const result = await generateText({
          model,
          messages: history,
          tools: plan.tools,
          prepareStep: plan.prepareStep,
          stopWhen: stepCountIs(1),
          ...(options.signal ? { abortSignal: options.signal } : {}),
        })
        history.push(...plan.transcript(result.response.messages))
      } catch (error) {
        if (!options.signal?.aborted) throw error // an aborted step sends nothing (R15, R30)
      } finally {
        delete settings.abortSignal
      }
      const sent = requests.slice(before)
      if (sent.length === 0) return { section: '', notices: [] }
      const steeredTexts = new Set(steered.flatMap((message) => message.content.map((part) => (part as { text?: unknown }).text)))
      return { section: sectionOf(sent[0]!.system), notices: sent[0]!.userTexts.slice(known).filter((text) => !steeredTexts.has(text)) }
    },
    async command(rawInput, attachments) {
      const commandId = `command-${Date.now()}-${++commands}`
      await log.append('command/run', { commandId, name: 'plan', args: rawInput })
      const result = await planMode.command.run({ agent, rawInput, ...(attachments ? { attachments } : {}) })
      await log.append('command/done', { commandId, kind: result.kind })
      return result
    },
    get: () => planMode.get(agent),
    steered: () => steered,
  }
  return { planMode, agent, plan, history, basics }
}

/** The exit tool as the SDK runs it: `needsApproval` first, then `execute`. */
type ExitTool = {
  needsApproval: (input: { plan: string }, options: { toolCallId: string; messages: ModelMessage[] }) => Promise<boolean>
  execute: (input: { plan: string }, options: { toolCallId: string; messages: ModelMessage[]; abortSignal?: AbortSignal }) => Promise<unknown>
}

/** A channel host's driver: reviews through a review channel, the exit call through the tool's `execute`. */
function channelDriver(options: AiSdkConformanceOptions, log: SessionLog): ConformanceAgent {
  const reviews = createReviewQueue()
  const { planMode, plan, history, basics } = hostProcess(options, log, reviews.channel)
  let calls = 0
  return {
    ...basics,
    async callExitTool(args, { signal } = {}) {
      const { execute } = plan.tools.exit_plan_mode as unknown as ExitTool
      try {
        const input = args as { plan: string }
        return (await execute(input, { toolCallId: `call-${++calls}`, messages: history, ...(signal ? { abortSignal: signal } : {}) })) as { approved: true }
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) }
      }
    },
    nextReview: reviews.nextReview,
    async restart() {
      await planMode.dispose()
      return channelDriver(options, log)
    },
  }
}

/** What survives a process of a `useChat` host besides the log: the chat's messages, here the card waiting for an answer. */
interface StoredChat {
  card?: { toolCallId: string; input: { plan: string } }
}

const isCleanApproval = (answer: ReviewAnswer) =>
  answer.answers.length === 1 && answer.answers[0]!.id === 'plan-review' && answer.answers[0]!.selected.length === 1 &&
  answer.answers[0]!.selected[0] === 'Approve' && answer.answers[0]!.custom === undefined && answer.answers[0]!.comments === undefined

const isDenial = (answer: ReviewAnswer) =>
  answer.answers.length === 1 && answer.answers[0]!.id === 'plan-review' && answer.answers[0]!.selected.length === 1 &&
  answer.answers[0]!.selected[0] === 'Keep planning' && answer.answers[0]!.comments === undefined

/**
 * A durable host's driver, told in the result (R81, R82, R87): the exit call opens a review through
 * the tool's `needsApproval` and waits as the card; the user's approval runs the tool's `execute`,
 * a denial goes to `callReviews.deny`, any other answer to `answerReview(…, { toldInResult: true })`;
 * the waiting call's result is the card settled by `settleClosedApprovals` in a later process.
 */
function durableDriver(options: AiSdkConformanceOptions, log: SessionLog, chat: StoredChat): DurableConformanceAgent {
  const { planMode, agent, plan, history, basics } = hostProcess(options, log, 'durable')
  const tool = () => plan.tools.exit_plan_mode as unknown as ExitTool
  const refusal = (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) })
  return {
    ...basics,
    async callExitTool(args) {
      const input = args as { plan: string }
      const toolCallId = `call-${Date.now()}-${Math.random().toString(36).slice(2)}`
      try {
        if (await tool().needsApproval(input, { toolCallId, messages: history })) {
          chat.card = { toolCallId, input }
          return { submitted: true, reviewId: planMode.openReview(agent)!.reviewId }
        }
        // A refused call needs no approval: the SDK runs `execute`, which fails with the refusal (R82).
        return (await tool().execute(input, { toolCallId, messages: history })) as { approved: true }
      } catch (error) {
        return refusal(error)
      }
    },
    openReview: () => planMode.openReview(agent),
    async answerReview(reviewId, answer) {
      const open = planMode.openReview(agent)
      const card = chat.card
      try {
        if (open?.reviewId === reviewId && card !== undefined && open.callId === card.toolCallId) {
          if (isCleanApproval(answer)) {
            await tool().execute(card.input, { toolCallId: card.toolCallId, messages: history })
            return 'approved'
          }
          if (isDenial(answer)) {
            const custom = answer.answers[0]!.custom
            await planMode.callReviews.deny(agent, new Map([[card.toolCallId, { input: card.input, ...(custom === undefined ? {} : { reason: custom }) }]]))
            return 'keep-planning'
          }
        }
        return await planMode.answerReview(agent, reviewId, answer, { toldInResult: true })
      } catch (error) {
        return refusal(error)
      }
    },
    // The web chat's Dismiss: the card's review closes as the user's dismissal, told in the call's result (R136).
    dismissReview: (reviewId) => planMode.dismissReview(agent, reviewId, { toldInResult: true }).catch(refusal),
    async callResult() {
      const card = chat.card
      if (card === undefined) throw new Error('no exit call is waiting')
      const waiting = {
        id: 'assistant-1',
        role: 'assistant',
        parts: [{ type: 'tool-exit_plan_mode', toolCallId: card.toolCallId, state: 'approval-requested', input: card.input, approval: { id: 'approval-1' } }],
      } as unknown as UIMessage
      const [settled] = plan.settleClosedApprovals([waiting])
      const part = settled!.parts[0] as { state: string; errorText?: string }
      if (part.state === 'output-available') return { isError: false, text: planMode.exitTool.resultText }
      if (part.state === 'output-error') return { isError: true, text: part.errorText! }
      throw new Error(`the waiting call's review is not closed (its card is ${part.state})`)
    },
    async restart() {
      await planMode.dispose()
      return durableDriver(options, log, chat)
    },
  }
}

/**
 * The conformance suites of the AI SDK adapter for a host's settings: `channel` (a review
 * channel, `defineConformanceSuite`) and `durable` (`review: 'durable'` through the SDK's tool
 * approval, told in the call's result: `defineDurableReviewSuite`). Each scenario's step is one
 * real `generateText` step through `withPlanMode` against a mock model that records what it was
 * sent; the section and notices are read from that request.
 */
export function conformanceSuites(options: AiSdkConformanceOptions): Required<StockConformanceSuites> {
  const name = options.name ?? 'AI SDK withPlanMode'
  const newLog = async () => (options.createLog ? await options.createLog() : createMemorySessionLog())
  const channel: ConformanceSuiteOptions = {
    name,
    ...(options.decisions ? { decisions: options.decisions } : {}),
    createHost: () => ({ section: options.section, createAgent: async () => channelDriver(options, await newLog()) }),
  }
  const durable: DurableReviewSuiteOptions = {
    name,
    toldInResult: true,
    createHost: () => ({ section: options.section, createAgent: async () => durableDriver(options, await newLog(), {}) }),
  }
  return { channel, durable }
}
