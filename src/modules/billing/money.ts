import type { CreateInvoiceBody } from '../../../schemas/billing.js'

/** `amount × basisPoints / 10000`, rounded half up, in exact integer arithmetic. */
export function percentOf(amount: number, basisPoints: number): number {
  return Number((BigInt(amount) * BigInt(basisPoints) + 5000n) / 10000n)
}

export function priceLines(lines: CreateInvoiceBody['lineItems'], taxRateBasisPoints: number) {
  const lineItems = lines.map((line) => ({ ...line, amount: line.quantity * line.unitPrice }))
  const subtotal = lineItems.reduce((sum, line) => sum + line.amount, 0)
  const tax = percentOf(subtotal, taxRateBasisPoints)
  return { lineItems, subtotal, tax, total: subtotal + tax }
}
