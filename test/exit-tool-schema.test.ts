/**
 * `exitTool.parameters` and `exitTool.outputSchema` are handed to frameworks as they are: their
 * types must be assignable to the JSON Schema types frameworks declare, without a cast, while the
 * shared objects stay frozen at run time.
 *
 * The type checks are type-level: `npx tsc --noEmit` (tsconfig.json includes test/) fails when an
 * assignment below stops compiling, and the `@ts-expect-error` line fails when the readonly shape
 * that needed a cast would compile again. vitest only runs the run-time checks.
 */
import { describe, expect, expectTypeOf, it } from 'vitest'
import { createPlanMode, type ExitPlanModeTool } from '../src/index.js'
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

  it('R40: the schema objects are frozen all the way down, shared by every service, and refuse changes', () => {
    const frozenDeep = (value: unknown): boolean =>
      value === null || typeof value !== 'object' || (Object.isFrozen(value) && Object.values(value).every(frozenDeep))
    expect(frozenDeep(exitTool.parameters)).toBe(true)
    expect(frozenDeep(exitTool.outputSchema)).toBe(true)
    expect(createPlanMode({ section: 'Other.' }).exitTool.parameters).toBe(exitTool.parameters)
    expect(() => exitTool.parameters.required.push('plan')).toThrow(TypeError)
    expect(() => {
      exitTool.parameters.properties.plan.description = 'changed'
    }).toThrow(TypeError)
    // A host that needs a variant clones it.
    const copy = structuredClone(exitTool.parameters)
    copy.properties.plan.description = 'changed'
    expect(exitTool.parameters.properties.plan.description).toBe(
      'The complete plan, as markdown, starting with a # heading that names it.',
    )
  })
})
