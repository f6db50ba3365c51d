import { type Static, Type } from '@sinclair/typebox'

export const BillingEnv = Type.Object(
  {
    DEFAULT_CURRENCY: Type.String({
      pattern: '^[A-Z]{3}$',
      default: 'USD',
      description: 'ISO 4217 currency of invoices that name none',
    }),
    TAX_RATE_BASIS_POINTS: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      default: 0,
      description: 'Tax on invoice subtotals in basis points (825 = 8.25 %), rounded half up',
    }),
  },
  { title: 'Billing' },
)

export interface BillingSettings {
  currency: string
  taxRateBasisPoints: number
}

export function billingSettings(env: Static<typeof BillingEnv>): BillingSettings {
  return { currency: env.DEFAULT_CURRENCY, taxRateBasisPoints: env.TAX_RATE_BASIS_POINTS }
}
