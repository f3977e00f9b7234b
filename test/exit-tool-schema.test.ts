/**
 * `exitTool.parameters` and `exitTool.outputSchema` are handed to frameworks as they are: their
 * types must be assignable to the JSON Schema types frameworks declare, without a cast, while the
 * objects stay the caller's own at run time (each read is a copy, R137).
 *
 * The type checks are type-level: `npx tsc --noEmit` (tsconfig.json includes test/) fails when an
 * assignment below stops compiling, and the `@ts-expect-error` line fails when the readonly shape
 * that needed a cast would compile again. vitest only runs the run-time checks.
 */
import { describe, expect, expectTypeOf, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type ExitPlanModeTool } from '../src/index.js'
import { type ExitPlanModeOutputSchema, type ExitPlanModeParameters } from '../src/plan/exit-tool.js'

// The JSON Schema draft-07 type of `@types/json-schema` (its `JSONSchema7`, which the AI SDK and
// many others use), restated: the package is not a dependency here, and `ai`'s re-export of it
// resolves to `any` without it.
type JSONSchema7TypeName = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null'
type JSONSchema7Type = string | number | boolean | JSONSchema7Object | JSONSchema7Array | null
interface JSONSchema7Object {
  [key: string]: JSONSchema7Type
}
interface JSONSchema7Array extends Array<JSONSchema7Type> {}
type JSONSchema7Definition = JSONSchema7 | boolean
interface JSONSchema7 {
  $id?: string
  $ref?: string
  $schema?: string
  $comment?: string
  $defs?: { [key: string]: JSONSchema7Definition }
  type?: JSONSchema7TypeName | JSONSchema7TypeName[]
  enum?: JSONSchema7Type[]
  const?: JSONSchema7Type
  multipleOf?: number
  maximum?: number
  exclusiveMaximum?: number
  minimum?: number
  exclusiveMinimum?: number
  maxLength?: number
  minLength?: number
  pattern?: string
  items?: JSONSchema7Definition | JSONSchema7Definition[]
  additionalItems?: JSONSchema7Definition
  maxItems?: number
  minItems?: number
  uniqueItems?: boolean
  contains?: JSONSchema7Definition
  maxProperties?: number
  minProperties?: number
  required?: string[]
  properties?: { [key: string]: JSONSchema7Definition }
  patternProperties?: { [key: string]: JSONSchema7Definition }
  additionalProperties?: JSONSchema7Definition
  dependencies?: { [key: string]: JSONSchema7Definition | string[] }
  propertyNames?: JSONSchema7Definition
  if?: JSONSchema7Definition
  then?: JSONSchema7Definition
  else?: JSONSchema7Definition
  allOf?: JSONSchema7Definition[]
  anyOf?: JSONSchema7Definition[]
  oneOf?: JSONSchema7Definition[]
  not?: JSONSchema7Definition
  format?: string
  title?: string
  description?: string
  default?: JSONSchema7Type
  readOnly?: boolean
  writeOnly?: boolean
  examples?: JSONSchema7Type
}

/** A strict function tool's parameters as the OpenAI Agents SDK types them (`JsonObjectSchema`), restated. */
type JsonObjectSchemaStrict = {
  type: 'object'
  properties: Record<string, { type: string; description?: string }>
  required: string[]
  additionalProperties: false
}

/** The plain object type many hosts use for "some JSON Schema". */
type PlainSchema = { [key: string]: unknown }

/** The shape `exitTool.parameters` had before: `as const`, deeply readonly. */
const READONLY_BEFORE = {
  type: 'object',
  properties: { plan: { type: 'string', description: 'd' } },
  required: ['plan'],
  additionalProperties: false,
} as const

function acceptsJsonSchema7(schema: JSONSchema7): JSONSchema7 {
  return schema
}
function acceptsStrictObjectSchema(schema: JsonObjectSchemaStrict): JsonObjectSchemaStrict {
  return schema
}
function acceptsRecord(schema: Record<string, unknown>): Record<string, unknown> {
  return schema
}
function acceptsPlain(schema: PlainSchema): PlainSchema {
  return schema
}

describe('exit_plan_mode schemas: assignable without a cast, frozen at run time', () => {
  const planMode = createPlanMode({ section: 'Plan.' })
  const { exitTool } = planMode

  it('R41: parameters and outputSchema are assignable to JSONSchema7, an Agents-SDK object schema and Record<string, unknown> (type-level, checked by tsc)', () => {
    // Each line is the check: it compiles without a cast.
    const asDraft7: JSONSchema7 = exitTool.parameters
    const outputAsDraft7: JSONSchema7 = exitTool.outputSchema
    const asStrict: JsonObjectSchemaStrict = exitTool.parameters
    const asRecord: Record<string, unknown> = exitTool.parameters
    const asPlain: PlainSchema = exitTool.outputSchema
    acceptsJsonSchema7(exitTool.parameters)
    acceptsJsonSchema7(exitTool.outputSchema)
    acceptsStrictObjectSchema(exitTool.parameters)
    acceptsRecord(exitTool.outputSchema)
    acceptsPlain(exitTool.parameters)
    expectTypeOf(exitTool.parameters).toEqualTypeOf<ExitPlanModeParameters>()
    expectTypeOf(exitTool.outputSchema).toEqualTypeOf<ExitPlanModeOutputSchema>()
    expectTypeOf<ExitPlanModeTool['parameters']['required']>().toEqualTypeOf<['plan']>()
    expectTypeOf<ExitPlanModeParameters>().toExtend<JSONSchema7>()
    expectTypeOf<ExitPlanModeOutputSchema>().toExtend<JSONSchema7>()
    // The check has teeth: the deeply readonly shape it replaces needs a cast.
    // @ts-expect-error readonly ['plan'] is not assignable to string[]
    acceptsJsonSchema7(READONLY_BEFORE)
    expect([asDraft7, outputAsDraft7, asStrict, asRecord, asPlain].every((schema) => typeof schema === 'object')).toBe(true)
  })

  it('R137: each read of parameters and outputSchema is the caller’s own plain copy, which it may change and extend (LangChain’s tool() failed with "object is not extensible" on the frozen one)', () => {
    const first = exitTool.parameters
    expect(Object.isExtensible(first)).toBe(true)
    expect(Object.isFrozen(first.properties.plan)).toBe(false)
    // What LangChain's tool() does to the schema it is given: it adds a property.
    Object.defineProperty(first, '$schema', { value: 'http://json-schema.org/draft-07/schema#', enumerable: true })
    first.properties.plan.description = 'changed'
    first.required.push('plan')
    const output = exitTool.outputSchema
    output.properties.approved.const = true
    ;(output as Record<string, unknown>).title = 'changed'
    // Another read, another service: the schema R41 gives, untouched.
    const pristine = {
      type: 'object',
      properties: { plan: { type: 'string', description: 'The complete plan, as markdown, starting with a # heading that names it.' } },
      required: ['plan'],
      additionalProperties: false,
    }
    expect(exitTool.parameters).toStrictEqual(pristine)
    expect(createPlanMode({ section: 'Other.' }).exitTool.parameters).toStrictEqual(pristine)
    expect(exitTool.parameters).not.toBe(exitTool.parameters)
    expect(exitTool.outputSchema).toStrictEqual({
      type: 'object',
      properties: { approved: { type: 'boolean', const: true } },
      required: ['approved'],
      additionalProperties: false,
    })
  })

  it('R137, R42: a changed copy changes none of the tool’s checks', async () => {
    const schema = exitTool.parameters
    ;(schema.properties as Record<string, unknown>).plan = { type: 'number' }
    ;(schema as { required: string[] }).required = []
    const session = createMemorySessionLog([{ type: 'plan/mode', data: { active: true } }])
    const agent = { id: 'agent-1', session }
    await expect(exitTool.execute({}, { agent })).rejects.toThrow('exit_plan_mode requires a "plan" string argument')
    await expect(exitTool.execute({ plan: 42 }, { agent })).rejects.toThrow('exit_plan_mode requires a "plan" string argument')
    // The plan passes the checks R42 makes, and goes on to the review (none here: check 8).
    await expect(exitTool.execute({ plan: '# Ship it' }, { agent })).rejects.toThrow(
      'no user-interaction channel is available to review the plan; ask the user to switch the session mode instead',
    )
  })

})
