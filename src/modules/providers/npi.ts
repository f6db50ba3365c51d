// An NPI's tenth digit is a Luhn check digit computed over the nine others prefixed with 80840
// (the card issuer prefix of US health identifiers), so a valid NPI makes "80840" + NPI Luhn-valid.
const NPI_PREFIX = '80840'

function luhnValid(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i])
    if (i % 2 === 1) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
  }
  return sum % 10 === 0
}

/** A National Provider Identifier: ten digits with a valid check digit. */
export function isValidNpi(npi: string): boolean {
  return /^\d{10}$/.test(npi) && luhnValid(NPI_PREFIX + npi)
}
