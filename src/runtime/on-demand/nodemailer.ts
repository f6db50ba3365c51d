// Loaded on demand (see ioredis.ts beside it): the first password-reset mail over SMTP.
export { createTransport } from 'nodemailer'
