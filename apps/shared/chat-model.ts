/**
 * Which model `plan-mode chat` talks to. A real provider when asked for (`--provider`) or when its
 * API key is set, else the offline model. Provider packages are optional peer dependencies, so
 * they are imported only when chosen; a missing one, a missing key or a contradictory option is
 * bad input (a `CliError`), reported before anything starts.
 */
import { createGateway, type LanguageModel } from 'ai'
import { CliError } from './cli-error.js'

/** The providers `--provider` accepts. */
export const CHAT_PROVIDERS = ['openai', 'anthropic', 'gateway', 'offline'] as const
/** A provider `--provider` accepts. */
export type ChatProvider = (typeof CHAT_PROVIDERS)[number]
type RealProvider = Exclude<ChatProvider, 'offline'>

/** The environment variable holding each real provider's API key, in the order they are tried. */
export const API_KEY_VARIABLES: Readonly<Record<RealProvider, string>> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  gateway: 'AI_GATEWAY_API_KEY',
}

/** The model each real provider uses without `--model`. */
export const DEFAULT_MODEL_IDS: Readonly<Record<RealProvider, string>> = {
  openai: 'gpt-5-mini',
  anthropic: 'claude-sonnet-4-5',
  gateway: 'openai/gpt-5-mini',
}

/** What the user asked for on the command line. */
export interface ChatModelRequest {
  provider?: string
  model?: string
  baseUrl?: string
}

/** The model chat will use. */
export type ChatModelChoice =
  | { provider: 'offline'; label: string; /** Why the offline model was chosen without being asked for. */ note?: string }
  | { provider: RealProvider; label: string; model: LanguageModel }

/** The provider packages chat imports on demand (optional peer dependencies). */
const PACKAGES = {
  openai: '@ai-sdk/openai',
  anthropic: '@ai-sdk/anthropic',
} as const

/**
 * Chooses chat's model. Without `--provider`: the first provider whose API key is set (OpenAI,
 * Anthropic, the AI Gateway), OpenAI when only `--base-url` is given (an OpenAI-compatible
 * server), else the offline model with a note saying how to get a real one.
 *
 * `--base-url` with OpenAI talks to the server's chat-completions API (what OpenAI-compatible
 * servers implement) and needs `--model`; there the API key is optional (local servers ignore it).
 * The key is passed to the provider explicitly, so `env` is the only environment read.
 * @throws CliError for an unknown provider, a missing key or package, or an option the chosen
 *   provider cannot take.
 */
export async function chooseChatModel(
  request: ChatModelRequest,
  env: Record<string, string | undefined>,
): Promise<ChatModelChoice> {
  const { model: modelId, baseUrl } = request
  if (request.provider !== undefined && !(CHAT_PROVIDERS as readonly string[]).includes(request.provider)) {
    throw new CliError(`chat: unknown provider "${request.provider}" (providers: ${CHAT_PROVIDERS.join(', ')})`)
  }
  if (modelId !== undefined && modelId.trim() === '') throw new CliError('chat: --model needs a model id')
  if (baseUrl !== undefined && !/^https?:\/\/[^\s/]+/.test(baseUrl)) {
    throw new CliError(`chat: --base-url must be an http(s) URL, not "${baseUrl}"`)
  }
  const keyOf = (provider: RealProvider) => nonEmpty(env[API_KEY_VARIABLES[provider]])
  const provider: ChatProvider =
    (request.provider as ChatProvider | undefined) ??
    (baseUrl !== undefined ? 'openai' : (Object.keys(API_KEY_VARIABLES) as RealProvider[]).find((p) => keyOf(p)) ?? 'offline')

  if (provider === 'offline') {
    const realOnly = modelId !== undefined ? '--model' : baseUrl !== undefined ? '--base-url' : undefined
    if (realOnly !== undefined) {
      throw new CliError(
        request.provider === undefined
          ? `chat: ${realOnly} needs a provider: set ${Object.values(API_KEY_VARIABLES).join(', ')} or pass --provider`
          : `chat: the offline model takes no ${realOnly}`,
      )
    }
    const label = 'offline (a scripted model; no network)'
    if (request.provider !== undefined) return { provider, label }
    const keys = Object.values(API_KEY_VARIABLES).join(', ')
    return { provider, label, note: `No API key set (${keys}): using the offline model. Set one, or pass --provider, for a real model.` }
  }

  const apiKey = keyOf(provider)
  const keyOptional = provider === 'openai' && baseUrl !== undefined
  if (apiKey === undefined && !keyOptional) {
    throw new CliError(`chat --provider ${provider} needs ${API_KEY_VARIABLES[provider]} set to an API key`)
  }
  if (provider === 'openai' && baseUrl !== undefined && modelId === undefined) {
    throw new CliError('chat: --base-url needs --model (a model the server serves)')
  }
  const id = modelId ?? DEFAULT_MODEL_IDS[provider]
  const label = `${provider} ${id}${baseUrl !== undefined ? ` at ${baseUrl}` : ''}`
  const settings = { ...(baseUrl !== undefined ? { baseURL: baseUrl } : {}) }

  switch (provider) {
    case 'openai': {
      const { createOpenAI } = await importProvider('openai', () => import('@ai-sdk/openai'))
      // Local servers may need no key; an empty one keeps the provider off process.env.
      const openai = createOpenAI({ ...settings, apiKey: apiKey ?? '' })
      return { provider, label, model: baseUrl !== undefined ? openai.chat(id) : openai(id) }
    }
    case 'anthropic': {
      const { createAnthropic } = await importProvider('anthropic', () => import('@ai-sdk/anthropic'))
      return { provider, label, model: createAnthropic({ ...settings, apiKey: apiKey! })(id) }
    }
    case 'gateway':
      // The AI Gateway provider ships with `ai` itself.
      return { provider, label, model: createGateway({ ...settings, apiKey: apiKey! })(id) }
  }
}

/**
 * Imports a provider package, turning its absence into bad input.
 * @throws CliError `chat --provider <name> needs <package> (npm install <package>@3)` when the
 *   package is not installed; any other import failure as it is.
 */
export async function importProvider<T>(provider: keyof typeof PACKAGES, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    const name = PACKAGES[provider]
    const code = (error as { code?: unknown } | null)?.code
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(name)) {
      throw new CliError(`chat --provider ${provider} needs ${name} (npm install ${name}@3)`)
    }
    throw error
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value
}
