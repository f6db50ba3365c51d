import { type CreateInvoiceBody, MAX_MONEY } from '../../../schemas/billing.js'
import { invalidField, invalidFields } from '../../errors.js'

/** `amount × basisPoints / 10000`, rounded half up, in exact integer arithmetic. */
export function percentOf(amount: number, basisPoints: number): number {
  return Number((BigInt(amount) * BigInt(basisPoints) + 5000n) / 10000n)
}

/**
 * Each line's amount and the totals stay within MAX_MONEY, the ceiling the API documents for every
 * amount; past it an invoice would be stored that its own response schema refuses, and sums of
 * a hundred such lines would leave the range where a JavaScript number is exact.
 */
export function priceLines(lines: CreateInvoiceBody['lineItems'], taxRateBasisPoints: number) {
  const lineItems = lines.map((line, index) => {
    const amount = line.quantity * line.unitPrice
    if (amount > MAX_MONEY)
      throw invalidField(`lineItems.${index}`, `has an amount (quantity × unitPrice) over ${MAX_MONEY}`)
    return { ...line, amount }
  })
  const subtotal = lineItems.reduce((sum, line) => sum + line.amount, 0)
  const tax = percentOf(subtotal, taxRateBasisPoints)
  if (subtotal + tax > MAX_MONEY) {
    throw invalidFields(
      [{ path: 'lineItems', message: `add up to a total over ${MAX_MONEY}, tax included` }],
      `The invoice total exceeds ${MAX_MONEY}`,
    )
  }
  return { lineItems, subtotal, tax, total: subtotal + tax }
}
