import { defineConformanceSuite, defineDurableReviewSuite } from 'xstate-plan-mode/testing'
import { conformanceSuites } from 'xstate-plan-mode/testing/ai-sdk'
import { PLAN_SECTION } from './plan-section.js'

const suites = conformanceSuites({ section: PLAN_SECTION, system: 'You are a careful coding agent.' })
defineConformanceSuite(suites.channel) // reviews through a review channel
defineDurableReviewSuite(suites.durable) // durable reviews through the SDK's tool approval, told in the result
